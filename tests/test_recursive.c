#include <criterion/criterion.h>
Test(recursive, placeholder) { cr_assert(1); }
