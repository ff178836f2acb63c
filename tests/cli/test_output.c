/* test_output.c — files and streams shardlab writes (cli/output.c): a
 * regular file replaced atomically with its mode kept, a symbolic link
 * followed, devices and FIFOs written in place, the temporary file removed
 * on failure, abort and SIGTERM, and a full disk on stdout an error. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "fixture.h"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	static char buf[4096];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* Entries of dir other than . and .. */
static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	cr_assert_not_null(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/* The test's scratch folder, removed with what it holds when the test
 * ends (each test runs in a process of its own). */
static char made[64];

static void remove_tree(const char *path)
{
	DIR *d = opendir(path);
	if (!d) {
		unlink(path);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char sub[512];
		snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
		struct stat st;
		if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
			remove_tree(sub);
		else
			unlink(sub);
	}
	closedir(d);
	rmdir(path);
}

static void remove_made(void)
{
	if (made[0])
		remove_tree(made);
	fixture_teardown();
}

TestSuite(output, .init = fixture_setup, .fini = remove_made);

static char *make_dir(void)
{
	strcpy(made, "/tmp/shardlab-out-XXXXXX");
	cr_assert_not_null(mkdtemp(made));
	return made;
}

static void write_text(const char *path, const char *text)
{
	struct cli_out o;
	char err[256];
	cr_assert(cli_out_open(&o, path, err, sizeof err), "%s", err);
	fputs(text, o.f);
	cr_assert(cli_out_close(&o, err, sizeof err), "%s", err);
}

Test(output, regular_file_replaced_with_its_mode)
{
	char *dir = make_dir(), path[128];
	snprintf(path, sizeof path, "%s/report.json", dir);
	fixture_write(path, "old\n");
	chmod(path, 0640);
	write_text(path, "new\n");
	cr_expect_str_eq(slurp(path), "new\n");
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0640, "mode %o", st.st_mode & 0777);
	cr_expect_eq(entries(dir), 1, "a temporary file was left behind");
}

Test(output, new_file_is_created)
{
	char *dir = make_dir(), path[128];
	snprintf(path, sizeof path, "%s/new.json", dir);
	write_text(path, "{}\n");
	cr_expect_str_eq(slurp(path), "{}\n");
	cr_expect_eq(entries(dir), 1);
}

Test(output, symlink_is_followed_not_replaced)
{
	char *dir = make_dir(), real[128], link[128];
	snprintf(real, sizeof real, "%s/real.json", dir);
	snprintf(link, sizeof link, "%s/link.json", dir);
	fixture_write(real, "old\n");
	cr_assert_eq(symlink("real.json", link), 0);
	write_text(link, "new\n");
	struct stat st;
	cr_assert_eq(lstat(link, &st), 0);
	cr_expect(S_ISLNK(st.st_mode), "the link was replaced by a file");
	cr_expect_str_eq(slurp(real), "new\n");
	cr_expect_eq(entries(dir), 2);
}

Test(output, dangling_symlink_creates_its_target)
{
	char *dir = make_dir(), real[128], link[128];
	snprintf(real, sizeof real, "%s/later.json", dir);
	snprintf(link, sizeof link, "%s/link.json", dir);
	cr_assert_eq(symlink("later.json", link), 0);
	write_text(link, "x\n");
	struct stat st;
	cr_assert_eq(lstat(link, &st), 0);
	cr_expect(S_ISLNK(st.st_mode));
	cr_expect_str_eq(slurp(real), "x\n");
}

/* A device is opened in place: no temporary file beside it. Checked
 * before anything is written, so a broken build cannot replace it. */
static void expect_in_place(const char *dev, bool writes_ok)
{
	struct stat st;
	if (stat(dev, &st) != 0 || !S_ISCHR(st.st_mode))
		cr_skip_test("%s is not a character device here", dev);
	struct cli_out o;
	char err[256];
	cr_assert(cli_out_open(&o, dev, err, sizeof err), "%s", err);
	if (o.tmp) {
		cli_out_abort(&o);
		cr_assert_fail("%s would be written through a temporary file", dev);
	}
	fputs("some bytes\n", o.f);
	cr_expect_eq(cli_out_close(&o, err, sizeof err), writes_ok, "%s", err);
	if (!writes_ok)
		cr_expect(strstr(err, "No space left on device"), "%s", err);
	cr_assert_eq(stat(dev, &st), 0);
	cr_expect(S_ISCHR(st.st_mode), "%s is no longer a device", dev);
}

Test(output, dev_null_is_written_in_place) { expect_in_place("/dev/null", true); }
Test(output, full_device_is_an_error) { expect_in_place("/dev/full", false); }

Test(output, fifo_is_written_in_place)
{
	char *dir = make_dir(), path[128];
	snprintf(path, sizeof path, "%s/pipe", dir);
	cr_assert_eq(mkfifo(path, 0600), 0);
	int rd = open(path, O_RDONLY | O_NONBLOCK);
	cr_assert_geq(rd, 0);
	write_text(path, "through\n");
	char buf[32] = "";
	ssize_t n = read(rd, buf, sizeof buf - 1);
	close(rd);
	cr_expect_eq(n, 8);
	cr_expect_str_eq(buf, "through\n");
	struct stat st;
	cr_assert_eq(lstat(path, &st), 0);
	cr_expect(S_ISFIFO(st.st_mode), "the FIFO was replaced");
}

Test(output, abort_and_failure_leave_the_old_file)
{
	char *dir = make_dir(), path[128], err[256];
	snprintf(path, sizeof path, "%s/keep.json", dir);
	fixture_write(path, "old\n");
	struct cli_out o;
	cr_assert(cli_out_open(&o, path, err, sizeof err), "%s", err);
	fputs("half", o.f);
	cli_out_abort(&o);
	cr_expect_str_eq(slurp(path), "old\n");
	cr_expect_eq(entries(dir), 1);

	char missing[160];
	snprintf(missing, sizeof missing, "%s/no/such/dir.json", dir);
	cr_expect_not(cli_out_open(&o, missing, err, sizeof err));
	cr_expect(strstr(err, missing) && strstr(err, "cannot write"), "%s", err);
	cr_expect_not(cli_out_open(&o, dir, err, sizeof err), "a directory is not an output");
}

/* A writer of path that writes "half" and dies of signal sig. */
static pid_t killed_writer(const char *path, int sig)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct cli_out o;
		char err[256];
		if (!cli_out_open(&o, path, err, sizeof err))
			_exit(3);
		fputs("half", o.f);
		fflush(o.f);
		raise(sig);
		_exit(4);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == sig, "status %#x", st);
	return pid;
}

Test(output, sigterm_removes_the_temporary_file)
{
	char *dir = make_dir(), path[128];
	snprintf(path, sizeof path, "%s/killed.json", dir);
	fixture_write(path, "old\n");
	killed_writer(path, SIGTERM);
	cr_expect_eq(entries(dir), 1, "the temporary file survived SIGTERM");
	cr_expect_str_eq(slurp(path), "old\n");
}

Test(output, stdout_on_a_full_disk_exits_1)
{
	struct stat st;
	if (stat("/dev/full", &st) != 0 || !S_ISCHR(st.st_mode))
		cr_skip_test("no /dev/full here");
	const char *exe = getenv("SHARDLAB");
	cr_assert_not_null(exe);
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "'%s' check scenarios/ffn-8p.json 2>&1 >/dev/full", exe);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	char buf[512] = "";
	size_t n = fread(buf, 1, sizeof buf - 1, p);
	buf[n] = '\0';
	int rc = pclose(p);
	cr_expect(WIFEXITED(rc) && WEXITSTATUS(rc) == 1, "status %#x", rc);
	cr_expect_str_eq(buf, "shardlab: cannot write the output: No space left on device\n");
}

Test(output, trace_through_a_symlink_keeps_the_link)
{
	char *dir = make_dir(), real[128], link[128], args[400];
	snprintf(real, sizeof real, "%s/trace.json", dir);
	snprintf(link, sizeof link, "%s/latest.json", dir);
	fixture_write(real, "old\n");
	cr_assert_eq(symlink(real, link), 0);
	snprintf(args, sizeof args, "simulate scenarios/ffn-8p.json --trace '%s'", link);
	struct cli_run r = fixture_shardlab(args, true);
	cr_expect_eq(r.status, 0, "%s", r.out);
	free(r.out);
	struct stat st;
	cr_assert_eq(lstat(link, &st), 0);
	cr_expect(S_ISLNK(st.st_mode), "the link was replaced by a file");
	cr_expect(strstr(slurp(real), "\"traceEvents\""), "the trace did not reach the link's target");
	cr_expect_eq(entries(dir), 2);
}

/* Issue 42: a writer killed with SIGKILL leaves its temporary file; the
 * next write of the same name removes it, and only it: a live writer's
 * temporary file (locked, its process running), another target's, and
 * a file that merely looks alike stay. */
Test(output, sigkill_litter_is_removed_by_the_next_write)
{
	char *dir = make_dir(), path[128], other[128];
	snprintf(path, sizeof path, "%s/trace.json", dir);
	snprintf(other, sizeof other, "%s/other.json", dir);
	for (int i = 0; i < 3; i++)
		killed_writer(path, SIGKILL);
	killed_writer(other, SIGKILL);
	/* Each killed writer leaves its temporary file, and each write removes
	 * those its killed predecessors left: the last one's is there. */
	cr_expect_eq(entries(dir), 2);

	/* A live writer of the same name: its file must survive. */
	int go[2], done[2];
	cr_assert_eq(pipe(go), 0);
	cr_assert_eq(pipe(done), 0);
	pid_t live = fork();
	cr_assert_geq(live, 0);
	if (live == 0) {
		struct cli_out o;
		char err[256], c;
		if (!cli_out_open(&o, path, err, sizeof err))
			_exit(3);
		fputs("live", o.f);
		fflush(o.f);
		if (write(go[1], "x", 1) != 1 || read(done[0], &c, 1) != 1)
			_exit(5);
		_exit(cli_out_close(&o, err, sizeof err) ? 0 : 6);
	}
	char c;
	cr_assert_eq(read(go[0], &c, 1), 1);
	/* Look-alikes: a user's file of the same pattern but no pid, and
	 * one whose "pid" is not a number. */
	char like[160];
	snprintf(like, sizeof like, "%s/.trace.json.tmp-abcdef", dir);
	fixture_write(like, "mine\n");
	snprintf(like, sizeof like, "%s/.trace.json.tmp-x1-abcdef", dir);
	fixture_write(like, "mine\n");
	/* The live writer removed the last killed one's file when it opened:
	 * its own, other.json's litter and the look-alikes. */
	cr_expect_eq(entries(dir), 4);
	killed_writer(path, SIGKILL);
	cr_expect_eq(entries(dir), 5);

	write_text(path, "{}\n");
	cr_expect_str_eq(slurp(path), "{}\n");
	/* trace.json, the live writer's file, other.json's litter and the two
	 * look-alikes. */
	cr_expect_eq(entries(dir), 5, "stale temporary files of trace.json were not removed");

	cr_assert_eq(write(done[1], "x", 1), 1);
	int st;
	cr_assert_eq(waitpid(live, &st, 0), live);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
	cr_expect_str_eq(slurp(path), "live");
	cr_expect_eq(entries(dir), 4);
}

/* The text summary of the search's refusals names what layers-pp refuses
 * now: not only PP not dividing the layers, but any split the rule cannot
 * serve (the fixed split, or the layers plus the embedding and loss units:
 * docs/planner.md, "Plan search"). 3 refused by layers-pp, 2 by GPipe. */
Test(output, refused_summary_says_what_layers_pp_refuses)
{
	int64_t refused[SEARCH_RULE_COUNT] = {0};
	refused[SEARCH_RULE_LAYERS_PP] = 3;
	refused[SEARCH_RULE_SCHEDULE] = 2;
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);
	cr_assert_not_null(f);
	report_refused_text(f, refused);
	fclose(f);
	cr_expect_str_eq(text, "  left out, as Megatron-LM would refuse them: 5 (3 layers (with any "
	                       "embedding/loss units) do not split over PP; 2 GPipe (Megatron-LM "
	                       "runs 1F1B))\n");
	free(text);
}

/* A host-memory verdict is printed only where state is offloaded and the
 * topology states the host's memory: a run offloading nothing (0 bytes on
 * the host) gets no "host_oom", even beside a stated 512 GB host; 0.2 GB
 * offloaded on a 0.15 GB host is over it (0.2 > 0.15). */
Test(output, host_verdict_only_where_state_is_offloaded)
{
	cr_expect_not(cli_host_verdict(0, 512e9));
	cr_expect_not(cli_host_verdict(1e9, 0));
	cr_expect(cli_host_verdict(1e9, 512e9));
	cJSON *o = cJSON_CreateObject();
	report_json_host_oom(o, 0, 512e9);
	cr_expect_null(cJSON_GetObjectItemCaseSensitive(o, "host_oom"));
	report_json_host_oom(o, 0.2e9, 0.15e9);
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "host_oom")));
	cJSON_Delete(o);
	char buf[128];
	cr_expect_str_eq(cli_host_oom_text(buf, sizeof buf, "  ", 0, 512e9), "");
}
