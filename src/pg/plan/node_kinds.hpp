// What kind of plan node a node is, and positions in its target list: the vocabulary the
// planner hook's rewrites share.
#pragma once

#include "postgres_headers.hpp"

namespace pg_predict::pg {

bool is_scan(const Plan* plan);
bool is_join(const Plan* plan);

// An index scan that returns at most one row each time it runs: equality with one value on every
// key column of a unique, immediately checked btree index (a primary key lookup).
bool returns_at_most_one_row(const Plan* plan);

// Nodes whose expressions are evaluated over the single child's output.
bool reads_one_child(const Plan* plan);

Node* strip_relabel(Node* node);

// A whole-row Var of a plain table (seen through a partition's row-type conversion), or NULL.
Var* whole_row_var(Node* node);

// Position (1-based) of `expr` in `plan`'s target list, appending it if absent.
AttrNumber target_position(Plan* plan, Expr* expr);

// A Var reading column `resno` of `child`'s output, typed as that column.
Var* outer_var_for(Plan* child, AttrNumber resno);

}  // namespace pg_predict::pg
