// The ACL runtime part of acl/acl.h (CANN splits acl.h into acl_base.h, acl_rt.h, ...).
#pragma once

#include "acl.h"
