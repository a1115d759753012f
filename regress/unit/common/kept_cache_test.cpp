// KeptCache (include/pg_predict/common/kept_cache.hpp): uses, eviction of the least recently
// used, deletion only once no use holds an evicted object.
#include "pg_predict/common/kept_cache.hpp"

#include <gtest/gtest.h>

#include <set>

namespace {

std::set<int*> deleted;

void destroy(int* v) noexcept {
    deleted.insert(v);
    delete v;
}

TEST(KeptCache, EvictsTheLeastRecentlyUsedAndDeletesItOnceReleased) {
    deleted.clear();
    pg_predict::KeptCache<long, int> cache(2, destroy);
    int* a = new int(1);
    int* b = new int(2);
    int* c = new int(3);
    cache.keep(1, a);  // one use each
    cache.keep(2, b);
    cache.release(a);
    cache.release(b);
    EXPECT_EQ(cache.acquire(1), a);  // 1 is now the most recently used
    cache.release(a);
    cache.keep(3, c);  // evicts 2, the least recently used, unused: deleted now
    EXPECT_EQ(deleted.count(b), 1u);
    EXPECT_EQ(cache.acquire(2), nullptr);
    int* held = cache.acquire(1);  // 1 the most recently used again; 3 (c) still has its first use
    EXPECT_EQ(held, a);
    int* d = new int(4);
    cache.keep(4, d);  // evicts 3 while its use holds it: not deleted until released
    EXPECT_EQ(deleted.count(c), 0u);
    EXPECT_EQ(cache.acquire(3), nullptr);
    cache.release(c);
    EXPECT_EQ(deleted.count(c), 1u);
    cache.release(held);  // 1 is kept: released, not deleted
    EXPECT_EQ(deleted.count(a), 0u);
    EXPECT_EQ(cache.acquire(1), a);
    cache.release(a);
    cache.release(d);
}

}  // namespace
