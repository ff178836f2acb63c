#include <criterion/criterion.h>
Test(planner, placeholder) { cr_assert(1); }
