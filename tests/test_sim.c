#include <criterion/criterion.h>
Test(sim, placeholder) { cr_assert(1); }
