#include <criterion/criterion.h>
Test(models, placeholder) { cr_assert(1); }
