// The model catalog on a Citus cluster. There the catalog table is a Citus reference table:
// Citus keeps a copy of it (its one shard) on every node, the coordinator included, and writes
// each change to every copy in one distributed transaction (two-phase commit), so a node has
// either all of a model operation or none of it, and a node added later gets the copy before
// it holds shards to score. Changes go through the table on the coordinator (Citus routes
// them); reads go to this node's copy directly, because a shard query that read the table
// would start a distributed query inside a shard query, which Citus refuses.
#pragma once

#include "postgres_headers.hpp"

namespace pg_predict::pg {

// This node's copy of `catalog` (a relation in `schema`) when the catalog is a Citus reference
// table; InvalidOid when it is an ordinary table (no Citus in this database, or not yet
// distributed). An ERROR when it is distributed but this node has no copy yet.
Oid citus_catalog_copy(Oid catalog, Oid schema);

// Whether this node is a Citus worker (a node in Citus's metadata other than the coordinator).
bool on_citus_worker();

// Before any change to the catalog (create_model, train, deploy, drop, grants, owner): on a
// Citus worker an ERROR (models are changed on the coordinator); on a coordinator, makes the
// catalog a reference table first when it is not one yet. Nothing without Citus.
void prepare_citus_catalog_change(Oid catalog, Oid owner, const char* what);

}  // namespace pg_predict::pg
