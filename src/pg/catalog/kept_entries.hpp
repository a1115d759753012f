// Catalog entries a backend keeps between statements, so that a one-row statement's two lookups
// (planning, binding) cost a probe instead of an index scan each.
//
// Two levels:
//  * parsed rows: the entry made from a tuple version (relation, TID, xmin). The lookup still
//    finds the row through the index in the statement's snapshot; only parsing it is skipped.
//  * kept lookups: the answer to a lookup by name (or pinned id), used without reading the
//    table while no writer of the catalog has committed since it was read. Writers announce
//    themselves in shared memory around their commit (a generation advanced before the commit
//    becomes visible and again after it), so that a statement whose snapshot sees a change never
//    gets an entry from before it; an entry newer than the statement's snapshot (REPEATABLE READ)
//    is not used either. Only with shared_preload_libraries, on a primary, for the catalog read
//    through its indexes (catalog.cpp's direct reads).
#pragma once

#include "catalog/catalog.hpp"

namespace pg_predict::pg {

// A deep copy of `entry` in the current memory context.
CatalogEntry* copy_entry(const CatalogEntry* entry);

// The entry made from this tuple version of row `name`, copied into the current context; NULL
// when this backend has not parsed it.
CatalogEntry* parsed_row_entry(Oid relation, HeapTuple tuple, const char* name);
void keep_parsed_row(Oid relation, HeapTuple tuple, const char* name, const CatalogEntry* entry);

// The kept answer to the lookup of `name` (pinned_id > 0: that version's row) for a statement
// reading with `snapshot`, copied into the current context; NULL when there is none it may use.
CatalogEntry* kept_lookup(Oid relation, const char* name, int64 pinned_id, Snapshot snapshot);

// Whether a lookup may be kept now (no writer committing, not in recovery, not in parallel mode,
// this transaction has not written the catalog); sets the generation to keep it under. The
// lookup must then be read with a snapshot taken after this call (GetLatestSnapshot()).
bool may_keep_lookup(uint64* generation);
// Keeps the lookup read since may_keep_lookup(), unless a writer committed meanwhile.
void keep_lookup(uint64 generation, Oid relation, const char* name, int64 pinned_id, TransactionId xmin,
                 const CatalogEntry* entry);

// Executor start of a statement that writes the relations in `stmt`: a write to the catalog
// table makes this transaction a writer (announced at its commit).
void note_catalog_writes(const PlannedStmt* stmt);

void install_kept_entries();

}  // namespace pg_predict::pg
