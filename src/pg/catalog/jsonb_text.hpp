// jsonb <-> JSON text for documents of tens of MB (a 100k-tree model and its spec), with an
// interrupt check every few thousand values: PostgreSQL's JsonbToCString and jsonb_in have none,
// and took 1.4 s and 3.3 s of create_model on a 69 MB document that a cancel could not end.
// Both are PostgreSQL-side C (CHECK_FOR_INTERRUPTS may longjmp): call them from frames that
// hold no C++ objects with destructors.
#pragma once

#include "postgres_headers.hpp"

namespace pg_predict::pg {

// The document as JSON text, palloc'd: the values JsonbToCString writes (numbers as numeric_out
// writes them, strings escaped as escape_json does), without its spaces.
char* jsonb_to_text(Jsonb* document);

// jsonb_in of a NUL-terminated JSON text (same errors, same duplicate-key rule: the last wins).
Datum text_to_jsonb(const char* json);

}  // namespace pg_predict::pg
