/* stub: replaced by the implementation */
#include "planner-int.h"
