// The few objects of one kind a backend keeps by key (model versions' text encoders, parsed
// cascades): each acquire or keep counts a use that release ends; beyond `capacity` objects the
// least recently used one is evicted, and deleted once no use holds it.
#pragma once

#include <cstddef>
#include <vector>

namespace pg_predict {

template <typename Key, typename T>
class KeptCache {
public:
    KeptCache(size_t capacity, void (*destroy)(T*) noexcept) : capacity_(capacity), destroy_(destroy) {}

    // The object kept under `key`, with one more use; nullptr when none is.
    T* acquire(const Key& key) noexcept {
        for (size_t i = 0; i < entries_.size(); i++) {
            if (!(entries_[i].key == key) || entries_[i].evicted) continue;
            Entry e = entries_[i];
            e.uses++;
            entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
            entries_.push_back(e);  // most recently used last: a push after an erase never reallocates
            return e.value;
        }
        return nullptr;
    }

    // Keeps a new object under `key`, with one use.
    void keep(const Key& key, T* value) {
        entries_.push_back({key, value, 1, false});
        size_t live = 0;
        for (const Entry& e : entries_) live += e.evicted ? 0 : 1;
        for (size_t i = 0; live > capacity_ && i < entries_.size(); i++) {
            if (entries_[i].evicted) continue;
            entries_[i].evicted = true;  // deleted once no use holds it
            live--;
            if (entries_[i].uses == 0) {
                destroy_(entries_[i].value);
                entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
                i--;
            }
        }
    }

    // Ends one use of `value`.
    void release(const T* value) noexcept {
        for (size_t i = 0; i < entries_.size(); i++) {
            if (entries_[i].value != value) continue;
            if (--entries_[i].uses == 0 && entries_[i].evicted) {
                destroy_(entries_[i].value);
                entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
            }
            return;
        }
    }

private:
    struct Entry {
        Key key;
        T* value;
        int uses;
        bool evicted;
    };
    std::vector<Entry> entries_;  // most recently used last
    size_t capacity_;
    void (*destroy_)(T*) noexcept;
};

}  // namespace pg_predict
