#include <criterion/criterion.h>
Test(lower, placeholder) { cr_assert(1); }
