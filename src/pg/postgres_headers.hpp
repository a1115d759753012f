// PostgreSQL's C headers, included once for the whole src/pg/ layer. Nothing here may sit in
// a translation unit with torch headers (docs/design.md, house rule 1).
#pragma once

extern "C" {
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/snapmgr.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"
}

// Exported symbols: the module is built with -fvisibility=hidden.
#undef PGDLLEXPORT
#define PGDLLEXPORT __attribute__((visibility("default")))

// A SQL-callable C function. PostgreSQL 15's PG_FUNCTION_INFO_V1 marks only the info record
// visible, so the function itself needs PGDLLEXPORT too. Use inside extern "C".
#define PG_PREDICT_SQL_FUNCTION(name) \
    PG_FUNCTION_INFO_V1(name);        \
    PGDLLEXPORT Datum name(PG_FUNCTION_ARGS)
