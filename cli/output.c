/* output.c — every file shardlab writes goes through here.
 *
 * A regular file (or a name that does not exist yet) is written to a
 * temporary file in the same directory and renamed over the name only
 * once every byte reached it, so that a reader never sees half a file and
 * a failed run leaves the old one in place. SIGINT, SIGTERM and SIGHUP
 * remove the temporary files of the outputs still open before the process
 * dies of the signal. SIGKILL cannot be caught: a run killed that way
 * leaves its ".NAME.tmp-PID-XXXXXX" beside NAME, and the next write of NAME
 * removes it. A temporary file names its writer's process and is locked
 * (flock) while it is written; one whose lock is free and whose process is
 * gone is stale (a live writer holds its lock from just after creating the
 * file, and its process is alive before that). A symbolic link is followed: the
 * file it points at is replaced, the link stays. A name that is not a
 * regular file (/dev/null, /dev/stdout, a FIFO, a terminal) is written in
 * place: renaming over it would replace a device node with a file.
 *
 * Every write is checked at the end: the stream's error flag, fflush,
 * fsync of a regular file and fclose; any failure is an error the caller
 * reports with exit status 1. Standard output is checked the same way when
 * the process ends (cli_finish_stdout), so `shardlab ... > /dev/full`
 * fails loudly rather than losing the output.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#define MAX_PENDING 8
#define MAX_LINKS 40

/* Temporary files to remove on a signal; a slot is published (non-NULL)
 * only once its string is complete. */
static char *volatile pending[MAX_PENDING];
static bool handlers_installed;

static void on_signal(int sig)
{
	for (int i = 0; i < MAX_PENDING; i++) {
		char *p = pending[i];
		if (p)
			unlink(p);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void install_handlers(void)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	if (handlers_installed)
		return;
	handlers_installed = true;
	for (size_t i = 0; i < SL_COUNTOF(sigs); i++) {
		struct sigaction sa, old;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		/* A signal the caller chose to ignore stays ignored. */
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		sigaction(sigs[i], &sa, NULL);
	}
}

static int pending_add(char *tmp)
{
	sigset_t all, old;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	int slot = -1;
	for (int i = 0; i < MAX_PENDING && slot < 0; i++)
		if (!pending[i]) {
			pending[i] = tmp;
			slot = i;
		}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return slot;
}

static void pending_drop(int slot)
{
	sigset_t all, old;
	if (slot < 0)
		return;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	pending[slot] = NULL;
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* The name a symbolic link chain ends at (the name itself when it is not
 * a link); malloc'd, NULL with errno set. A link to a name that does not
 * exist yet ends at that name. */
static char *follow_links(const char *path)
{
	char *cur = strdup(path);
	for (int depth = 0; cur && depth < MAX_LINKS; depth++) {
		struct stat st;
		if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode))
			return cur;
		char target[PATH_MAX];
		ssize_t n = readlink(cur, target, sizeof target - 1);
		if (n < 0) {
			free(cur);
			return NULL;
		}
		target[n] = '\0';
		char *next;
		const char *slash = strrchr(cur, '/');
		if (target[0] == '/' || !slash) {
			next = strdup(target);
		} else {
			size_t dl = (size_t)(slash - cur) + 1;
			next = malloc(dl + (size_t)n + 1);
			if (next) {
				memcpy(next, cur, dl);
				memcpy(next + dl, target, (size_t)n + 1);
			}
		}
		free(cur);
		cur = next;
	}
	if (cur) {
		free(cur);
		errno = ELOOP;
	}
	return NULL;
}

/* Whether `name` is a temporary file of target `base` as cli_out_open
 * names them (".BASE.tmp-PID-XXXXXX"); its writer's pid into *pid. */
static bool temp_of(const char *name, const char *base, long *pid)
{
	size_t bl = strlen(base);
	if (name[0] != '.' || strncmp(name + 1, base, bl) || strncmp(name + 1 + bl, ".tmp-", 5))
		return false;
	const char *p = name + 1 + bl + 5;
	char *end;
	errno = 0;
	long v = strtol(p, &end, 10);
	if (end == p || *p < '0' || *p > '9' || errno || v <= 0 || *end != '-')
		return false;
	size_t k = strlen(end + 1);
	if (k != 6)
		return false;
	*pid = v;
	return true;
}

/* Removes the stale temporary files of target dir/base (dl: the length of
 * "dir/", 0 for the current folder): those whose writer is gone (its lock
 * free and its process not running). Best effort: what cannot be
 * inspected is left alone. */
static void remove_stale(const char *target, size_t dl)
{
	char *dir = dl ? strndup(target, dl) : strdup(".");
	DIR *d = dir ? opendir(dir) : NULL;
	const char *base = target + dl;
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL) {
		long pid;
		if (!temp_of(e->d_name, base, &pid) || pid == (long)getpid())
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;  /* its writer may be alive */
		int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		struct stat st;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
		    flock(fd, LOCK_EX | LOCK_NB) == 0)
			(void)unlinkat(dirfd(d), e->d_name, 0);
		close(fd);
	}
	if (d)
		closedir(d);
	free(dir);
}

static void set_err(char *err, size_t size, const char *path, int e)
{
	snprintf(err, size, "%s: cannot write: %s", path, strerror(e ? e : EIO));
}

bool cli_out_open(struct cli_out *o, const char *path, char *err, size_t err_size)
{
	memset(o, 0, sizeof(*o));
	o->slot = -1;
	o->path = path;
	o->target = follow_links(path);
	if (!o->target) {
		set_err(err, err_size, path, errno);
		return false;
	}
	struct stat st;
	bool exists = stat(o->target, &st) == 0;
	if (exists && S_ISDIR(st.st_mode)) {
		set_err(err, err_size, path, EISDIR);
		goto fail;
	}
	if (exists && !S_ISREG(st.st_mode)) {
		/* A device, FIFO or socket: written in place. */
		o->f = fopen(o->target, "w");
		if (!o->f) {
			set_err(err, err_size, path, errno);
			goto fail;
		}
		return true;
	}
	/* A temporary file beside the target: ".NAME.tmp-PID-XXXXXX", locked
	 * while it is written; those of killed writers go first. */
	const char *slash = strrchr(o->target, '/');
	size_t dl = slash ? (size_t)(slash - o->target) + 1 : 0;
	const char *base = o->target + dl;
	remove_stale(o->target, dl);
	size_t n = strlen(o->target) + 40;
	o->tmp = malloc(n);
	if (!o->tmp) {
		set_err(err, err_size, path, ENOMEM);
		goto fail;
	}
	snprintf(o->tmp, n, "%.*s.%s.tmp-%ld-XXXXXX", (int)dl, o->target, base, (long)getpid());
	install_handlers();
	sigset_t all, old;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	int fd = mkstemp(o->tmp);
	int saved = errno;
	if (fd >= 0) {
		o->slot = pending_add(o->tmp);
		(void)flock(fd, LOCK_EX | LOCK_NB);  /* a fresh file: nobody else holds it */
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (fd < 0) {
		set_err(err, err_size, path, saved);
		goto fail;
	}
	/* mkstemp makes the file private: give it the mode the file had, or
	 * the usual one for a new file. */
	mode_t mask = umask(0);
	umask(mask);
	(void)fchmod(fd, exists ? st.st_mode & 07777 : 0666 & ~mask);
	o->f = fdopen(fd, "w");
	if (!o->f) {
		saved = errno;
		close(fd);
		set_err(err, err_size, path, saved);
		goto fail;
	}
	return true;
fail:
	if (o->tmp && o->slot >= 0)
		unlink(o->tmp);
	pending_drop(o->slot);
	free(o->tmp);
	free(o->target);
	memset(o, 0, sizeof(*o));
	o->slot = -1;
	return false;
}

bool cli_out_close(struct cli_out *o, char *err, size_t err_size)
{
	if (!o->f)
		return false;
	int e = 0;
	bool ok = !ferror(o->f);
	if (!ok)
		e = errno;
	if (fflush(o->f) != 0) {
		ok = false;
		e = errno;
	}
	if (ok && o->tmp && fsync(fileno(o->f)) != 0 && errno != EINVAL) {
		ok = false;
		e = errno;
	}
	if (fclose(o->f) != 0 && ok) {
		ok = false;
		e = errno;
	}
	o->f = NULL;
	if (ok && o->tmp && rename(o->tmp, o->target) != 0) {
		ok = false;
		e = errno;
	}
	if (!ok) {
		set_err(err, err_size, o->path, e);
		if (o->tmp)
			unlink(o->tmp);
	}
	pending_drop(o->slot);
	free(o->tmp);
	free(o->target);
	o->tmp = o->target = NULL;
	return ok;
}

void cli_out_abort(struct cli_out *o)
{
	if (o->f)
		fclose(o->f);
	if (o->tmp)
		unlink(o->tmp);
	pending_drop(o->slot);
	free(o->tmp);
	free(o->target);
	memset(o, 0, sizeof(*o));
	o->slot = -1;
}

int cli_finish_stdout(int status)
{
	int e = 0;
	bool bad = ferror(stdout) != 0;
	if (bad)
		e = errno;
	if (fflush(stdout) != 0) {
		bad = true;
		e = errno;
	}
	if (!bad)
		return status;
	fprintf(stderr, "shardlab: cannot write the output: %s\n", strerror(e ? e : EIO));
	return status == EXIT_OK ? EXIT_INVALID : status;
}
