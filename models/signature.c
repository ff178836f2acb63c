/* stub: replaced by the implementation */
#include "models-int.h"
