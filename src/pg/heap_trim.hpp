// Gives the memory a big statement freed back to the system when its transaction ends.
#pragma once

namespace pg_predict::pg {

// create_model and drop_model call it: at the end of the transaction (commit or abort, when
// the statement's memory contexts are gone) runtime::release_free_memory() trims the heap.
void trim_heap_at_transaction_end();

}  // namespace pg_predict::pg
