// The utility hook that keeps models and roles consistent, as PostgreSQL keeps its own objects:
// DROP ROLE is refused while the role owns models or holds grants on them, REASSIGN OWNED moves
// its models, DROP OWNED drops them and revokes its grants, ALTER ROLE ... RENAME TO renames it
// in the catalog. Roles are cluster-wide but the catalog is per database: the hook sees the
// models of the database the command runs in.
#pragma once

namespace pg_predict::pg {

// Installs the ProcessUtility hook (from _PG_init, preloaded or not).
void install_role_hook();

}  // namespace pg_predict::pg
