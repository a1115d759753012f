// Feature push-down: a scoring call's whole-row argument becomes the model's feature columns,
// read by the scan itself (projection push-down), through an Append by every partition's scan.
#pragma once

#include "plan/call_collection.hpp"
#include "catalog/catalog.hpp"

namespace pg_predict::pg {

// Where input `in`'s features come from, for call argument `arg` in the node `rw` rewrites: the
// columns of a scanned table, an array's elements, or the row or array value as it is. A
// push-down into the node's child is only decided here (kept in rw->pushdowns, in->exprs set
// by apply_pushdowns). False when the argument is nothing we batch. Errors (a missing or
// non-numeric column) are the plan-time errors users see.
bool feature_source(Rewrite* rw, Node* arg, const CatalogEntry* entry, BatchInput* in);

// Applies the push-downs feature_source decided: the child (every partition scan under an
// Append) also returns the feature columns, and each input reads them from the child's output.
void apply_pushdowns(Rewrite* rw);

// The scans under `append` when every one of them is a plain table's scan returning its whole
// row at `attno` (a partitioned table read by an aggregate); NIL otherwise.
List* partition_scans_returning_row(Append* append, AttrNumber attno);

// The feature expressions of input `in` as a scan below reads them (Vars of the scanned
// relation, constants for features the model ignores), where they can still be changed: one per
// scan the push-down decided for it (the scan child, or every partition's scan under an
// Append), as ScannedColumns*; NIL for an input without a push-down. Predicate pruning
// replaces the columns it makes unread.
struct ScannedColumns {
    Plan* scan;
    List** columns;
};
List* pushed_down_columns(Rewrite* rw, BatchInput* in);

}  // namespace pg_predict::pg
