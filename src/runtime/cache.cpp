// Per-backend cache of loaded programs keyed by (catalog row id, strategy): strategy "" is
// the program stored in the catalog, any other the same model compiled with that strategy (a
// variant, asked for by the pg_predict.strategy setting); a copy on the GPU adds "@cuda:0" to
// its CPU program's key. A backend is single threaded, so no locking.
//
// Bounded two ways (defect: a backend doing create / replace / drop cycles grew without end):
// - by bytes: beyond pg_predict.cache_size the least recently used idle programs go, stored
//   programs and variants alike (and never more than kMaxCached entries);
// - by version: each model name maps to the id bind_model saw last, and the idle programs of
//   its other ids are freed when a new one is seen, or all of them when the model is dropped.
// Programs in use (refs > 0) are never freed; the release of the last reference frees them if
// they are over the bound or retired.
// Every change of the contents is told to the cache listener (src/pg publishes this backend's
// loaded models for the model_stats view), once per public call that made one.
#include <algorithm>
#include <functional>
#include <iterator>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "pg_predict/common/error.hpp"
#include "pg_predict/compiler/compile.hpp"
#include "pg_predict/optimizer/optimize.hpp"
#include "pg_predict/runtime/api.hpp"
#include "pg_predict/spec/pipeline.hpp"
#include "program_internal.hpp"
#include "bound_specialization_internal.hpp"

namespace pg_predict::runtime {
namespace {

// Programs kept, at most (besides pg_predict.cache_size): a backend that scores a model per
// tenant may hold thousands. model_stats sees kMaxCachedPrograms of them (cached_models).
constexpr size_t kMaxCached = 65536;
// A program's own cost beyond its bytes (module, methods, graph): a rough constant.
constexpr size_t kProgramOverhead = 64 << 10;

using Key = std::pair<int64_t, std::string>;

struct KeyHash {
    size_t operator()(const Key& k) const noexcept {
        return std::hash<int64_t>()(k.first) * 31 + std::hash<std::string>()(k.second);
    }
};

struct Cache {
    std::unordered_map<Key, Program*, KeyHash> programs;
    Program* oldest_idle = nullptr;  // the idle programs, least recently released first
    Program* newest_idle = nullptr;
    uint64_t clock = 0;
    size_t bytes = 0;  // sum of the programs' bytes
    // The model name of each id bind_model has reported, and each name's current id.
    std::unordered_map<int64_t, std::string> model_of;
    std::unordered_map<std::string, int64_t> current;
};

size_t limit_bytes = size_t(128) << 20;  // pg_predict.cache_size's default
CacheListener listener = nullptr;
UnmapListener unmap_listener = nullptr;
// What a mapped program costs the backend: the record, its missing inputs, a staged copy.
constexpr size_t kMappedOverhead = 4 << 10;
bool contents_changed = false;  // since the listener was last told

// At the end of each public call that may change the contents.
void tell_listener() noexcept {
    if (!contents_changed) return;
    contents_changed = false;
    if (listener != nullptr) listener();
}

// Built on first use, never in a static initializer.
Cache& cache() {
    static Cache* c = new Cache;
    return *c;
}

void unlink_idle(Program* p) {
    if (!p->idle) return;
    Cache& c = cache();
    if (p->idle_prev != nullptr) p->idle_prev->idle_next = p->idle_next; else c.oldest_idle = p->idle_next;
    if (p->idle_next != nullptr) p->idle_next->idle_prev = p->idle_prev; else c.newest_idle = p->idle_prev;
    p->idle_prev = p->idle_next = nullptr;
    p->idle = false;
}

void push_idle(Program* p) {
    Cache& c = cache();
    p->idle_prev = c.newest_idle;
    p->idle_next = nullptr;
    if (c.newest_idle != nullptr) c.newest_idle->idle_next = p; else c.oldest_idle = p;
    c.newest_idle = p;
    p->idle = true;
}

void destroy(Program* p) {
    unlink_idle(p);
    contents_changed = true;
    cache().bytes -= p->bytes;
    free_module(p->module);
    void* mapping = p->mapped ? p->mapping : nullptr;
    delete p;
    if (mapping != nullptr && unmap_listener != nullptr) unmap_listener(mapping);
}

// Whether an idle program's model version is no longer the current one of its name.
bool retired(const Cache& c, const Program* p) {
    auto name = c.model_of.find(p->id);
    if (name == c.model_of.end()) return false;
    auto now = c.current.find(name->second);
    return now == c.current.end() || now->second != p->id;
}

// Frees the idle programs for which drop(program) holds.
template <typename Pred>
void free_idle_if(Pred drop) {
    Cache& c = cache();
    for (auto it = c.programs.begin(); it != c.programs.end();) {
        if (it->second->refs == 0 && drop(it->second)) {
            destroy(it->second);
            it = c.programs.erase(it);
        } else {
            ++it;
        }
    }
}

// Ids whose name no longer maps to them and that have no program left are forgotten.
// Linear in ids and programs: a backend may know thousands of names (a model per tenant).
void forget_unused_ids() {
    Cache& c = cache();
    std::unordered_set<int64_t> with_program;
    for (const auto& entry : c.programs) with_program.insert(entry.second->id);
    for (auto it = c.model_of.begin(); it != c.model_of.end();) {
        const bool has_program = with_program.count(it->first) > 0;
        auto now = c.current.find(it->second);
        const bool is_current = now != c.current.end() && now->second == it->first;
        it = has_program || is_current ? std::next(it) : c.model_of.erase(it);
    }
}

// Beyond the bounds, the least recently used idle programs go.
void evict_over_bound() {
    Cache& c = cache();
    while (c.programs.size() > kMaxCached || c.bytes > limit_bytes) {
        Program* victim = c.oldest_idle;
        if (victim == nullptr) return;  // all in use: over the bound for now
        c.programs.erase(Key(victim->id, victim->strategy));
        destroy(victim);
    }
}

// Retired idle programs go, then the least recently used beyond the bounds. A sweep over every
// program: only where what is retired changes (a new version, a drop); an insert or a release
// needs only evict_over_bound.
void evict_idle() {
    Cache& c = cache();
    free_idle_if([&](const Program* p) { return retired(c, p); });
    evict_over_bound();
}

Program* hold(Program* p) {
    if (p->refs == 0) unlink_idle(p);
    ++p->refs;
    p->last_used = ++cache().clock;
    return p;
}

Program* acquire(int64_t id, const std::string& strategy) {
    auto it = cache().programs.find(Key(id, strategy));
    return it == cache().programs.end() ? nullptr : hold(it->second);
}

// p, just made, into the cache under (id, strategy), counted, with a reference held.
Program* keep(Program* p) {
    cache().bytes += p->bytes;
    cache().programs.emplace(Key(p->id, p->strategy), p);
    contents_changed = true;
    hold(p);
    evict_over_bound();
    tell_listener();
    return p;
}

Program* insert(int64_t id, const std::string& strategy, const void* bytes, size_t length) {
    auto* p = new Program;
    p->id = id;
    p->strategy = strategy;
    try {
        p->module = load_module(bytes, length, *p);
    } catch (...) {
        delete p;
        throw;
    }
    // A shared featurizer's buffers count for the program that loaded them first only.
    p->bytes = length - std::min(length, p->shared_bytes) + kProgramOverhead;
    return keep(p);
}

// The canonical name of a variant's strategy; "auto" and unknown names are InvalidParameter.
std::string variant_strategy(const char* strategy) {
    if (strategy == nullptr) fail(ErrorCategory::InvalidParameter, "no strategy given for a program variant");
    const compiler::Strategy s = compiler::parse_strategy(strategy);
    if (s == compiler::Strategy::Auto)
        fail(ErrorCategory::InvalidParameter,
             "strategy \"auto\" names no program variant; resolve it to the model's own program");
    return compiler::strategy_name(s);
}

}  // namespace

Program* acquire_cached_program(int64_t id) { return acquire(id, ""); }

Program* load_program(int64_t id, const void* bytes, size_t length) {
    // Ids are never reused for different bytes, so a cached one is the same program.
    if (Program* p = acquire(id, "")) return p;
    return insert(id, "", bytes, length);
}

Program* map_program(int64_t id, const void* image, size_t length, void* mapping) {
    if (cache().programs.count(Key(id, "")) > 0) fail(ErrorCategory::Internal, "map_program: program already cached");
    auto* p = new Program;
    p->id = id;
    try {
        read_native_image(image, length, *p);
    } catch (...) {
        delete p;
        throw;
    }
    p->mapping = mapping;
    p->bytes = kMappedOverhead + p->missing_inputs.size() * sizeof(int32_t);
    return keep(p);
}

void set_unmap_listener(UnmapListener l) noexcept { unmap_listener = l; }

bool program_is_mapped(const Program* p) noexcept { return p != nullptr && p->mapped && p->module == nullptr; }

void attach_module(Program* p, const void* bytes, size_t length) {
    if (p == nullptr || !p->mapped) fail(ErrorCategory::Internal, "attach_module: not a mapped program");
    if (p->module != nullptr) return;
    Program scratch;  // the loaded module's own views: the mapped ones stay
    p->module = load_module(bytes, length, scratch);
    if (scratch.num_features != p->num_features || scratch.output_width != p->output_width)
        fail(ErrorCategory::InvalidModel, "the stored program and its shared image disagree; register the model again");
    cache().bytes += length;
    p->bytes += length;
    contents_changed = true;
    tell_listener();
}

Program* acquire_cached_variant(int64_t id, const char* strategy) {
    return acquire(id, variant_strategy(strategy));
}

Program* compile_variant(int64_t id, const char* strategy, const char* spec_json, size_t length) {
    const std::string name = variant_strategy(strategy);
    // The spec of an id never changes either: a cached variant is the same program.
    if (Program* p = acquire(id, name)) return p;
    if (spec_json == nullptr) fail(ErrorCategory::Internal, "compile_variant: null spec");
    spec::Pipeline pipeline = spec::from_json(std::string(spec_json, length));
    spec::validate(pipeline);
    pipeline = optimizer::optimize(pipeline);  // as create_model compiled it
    const std::string bytes = compiler::compile(pipeline, compiler::parse_strategy(name));
    return insert(id, name, bytes.data(), bytes.size());
}

namespace {

compiler::Output compiler_output(Output output) {
    switch (output) {
        case Output::DecisionFunction: return compiler::Output::DecisionFunction;
        case Output::ScoreSamples: return compiler::Output::ScoreSamples;
        case Output::Contributions: return compiler::Output::Contributions;
    }
    fail(ErrorCategory::Internal, "unknown program output");
}

// "decision_function:native", ...: never a strategy name, so never a variant's key.
std::string output_key(Output output, const char* strategy) {
    if (strategy == nullptr) fail(ErrorCategory::Internal, "no strategy given for an output program");
    const compiler::Strategy s = compiler::parse_strategy(strategy);
    return std::string(compiler::output_name(compiler_output(output))) + ":" + compiler::strategy_name(s);
}

}  // namespace

Program* acquire_cached_output(int64_t id, Output output, const char* strategy) {
    return acquire(id, output_key(output, strategy));
}

Program* compile_output(int64_t id, Output output, const char* strategy, const char* spec_json, size_t length) {
    const std::string key = output_key(output, strategy);
    if (Program* p = acquire(id, key)) return p;
    if (spec_json == nullptr) fail(ErrorCategory::Internal, "compile_output: null spec");
    spec::Pipeline pipeline = spec::from_json(std::string(spec_json, length));
    spec::validate(pipeline);
    compiler::check_output(pipeline, compiler_output(output));  // before the optimizer's work
    // Contributions are of the imported columns: pruning and fusion would move them.
    if (output != Output::Contributions) pipeline = optimizer::optimize(pipeline);
    compiler::Strategy s = compiler::parse_strategy(strategy);
    if (s == compiler::Strategy::Auto) s = compiler::choose_strategy(pipeline);
    const std::string bytes = compiler::compile(pipeline, s, compiler_output(output));
    return insert(id, key, bytes.data(), bytes.size());
}

Program* acquire_on_device(Program* p, Device device) {
    if (p == nullptr) fail(ErrorCategory::Internal, "acquire_on_device: null program");
    if (p->device == device) return hold(p);
    if (p->device != Device::Cpu)
        fail(ErrorCategory::Internal, "acquire_on_device: the source program must be on the CPU");
    if (p->module == nullptr)
        fail(ErrorCategory::Internal, "acquire_on_device: a mapped program needs its module first (attach_module)");
    const std::string key = p->strategy + "@cuda:0";
    if (Program* q = acquire(p->id, key)) return q;
    auto* q = new Program;
    q->id = p->id;
    q->strategy = key;
    q->device = device;
    q->num_features = p->num_features;
    q->output_width = p->output_width;
    q->reads_float64 = p->reads_float64;
    try {
        q->module = copy_module_to_device(p->module, device);
    } catch (...) {
        delete q;
        throw;
    }
    q->bytes = p->bytes;
    return keep(q);
}

Device program_device(const Program* p) {
    if (p == nullptr) fail(ErrorCategory::Internal, "program_device: null program");
    return p->device;
}

void release_program(Program* p) {
    if (p == nullptr) return;
    if (p->refs <= 0)
        fail(ErrorCategory::Internal, "release_program: program " + std::to_string(p->id) +
                                          (p->strategy.empty() ? "" : " (" + p->strategy + ")") +
                                          " released more often than acquired");
    --p->refs;
    if (p->refs == 0) {
        push_idle(p);
        // A version retired while it was in use goes now; the others stay within the bounds.
        if (retired(cache(), p)) free_idle_if([p](const Program* q) { return q == p; });
        evict_over_bound();
    }
    tell_listener();
}

void set_cache_limit(size_t bytes) noexcept { limit_bytes = bytes; }

size_t cached_program_bytes() { return cache().bytes; }

size_t program_bytes(const Program* p) noexcept { return p->bytes; }

size_t cached_program_count() { return cache().programs.size(); }

// A record per program, sorted by id and merged in place: n log n for the thousand programs a
// backend may hold, without allocating.
size_t cached_models(CachedModel* out, size_t capacity) noexcept {
    size_t count = 0;
    for (const auto& entry : cache().programs) {
        if (count == capacity) break;
        out[count++] = CachedModel{entry.second->id, 1, static_cast<int64_t>(entry.second->bytes)};
    }
    std::sort(out, out + count, [](const CachedModel& a, const CachedModel& b) { return a.id < b.id; });
    size_t merged = 0;
    for (size_t k = 0; k < count; k++) {
        if (merged > 0 && out[merged - 1].id == out[k].id) {
            out[merged - 1].programs += out[k].programs;
            out[merged - 1].bytes += out[k].bytes;
        } else {
            out[merged++] = out[k];
        }
    }
    return merged;
}

void set_cache_listener(CacheListener l) noexcept { listener = l; }

void note_model_version(const char* name, int64_t id) {
    if (name == nullptr) fail(ErrorCategory::Internal, "note_model_version: null name");
    Cache& c = cache();
    auto now = c.current.find(name);
    if (now != c.current.end() && now->second == id && c.model_of.count(id)) return;  // the usual case
    const bool new_name = now == c.current.end();
    c.model_of[id] = name;
    c.current[name] = id;
    if (new_name) return;  // no version of it was cached: nothing retired (a tenant's model met first)
    evict_idle();
    forget_unused_ids();
    tell_listener();
}

void forget_model(const char* name) {
    if (name == nullptr) fail(ErrorCategory::Internal, "forget_model: null name");
    Cache& c = cache();
    c.current.erase(name);
    evict_idle();  // every id of the name is retired now
    forget_unused_ids();
    tell_listener();
}

int program_output_width(const Program* p) {
    if (p == nullptr) fail(ErrorCategory::Internal, "program_output_width: null program");
    return p->output_width;
}

int64_t program_input_width(const Program* p) {
    if (p == nullptr) fail(ErrorCategory::Internal, "program_input_width: null program");
    return p->num_features;
}

bool program_reads_float64(const Program* p) {
    if (p == nullptr) fail(ErrorCategory::Internal, "program_reads_float64: null program");
    return p->reads_float64;
}

namespace {

// "pruned:native:<bounds>": never a strategy name, so never a variant's or an output's key.
std::string pruned_key(const char* strategy, const std::string& bounds) {
    return "pruned:" + variant_strategy(strategy) + ":" + bounds;
}

}  // namespace

Program* acquire_cached_specialized(int64_t id, const char* strategy, const std::string& bounds) {
    return acquire(id, pruned_key(strategy, bounds));
}

Program* compile_specialized(int64_t id, const char* strategy, const std::string& bounds, const char* spec_json,
                        size_t length) {
    const std::string key = pruned_key(strategy, bounds);
    if (Program* p = acquire(id, key)) return p;
    const optimizer::Specialization s = specialized(id, bounds, spec_json, length);
    if (!s.changed) fail(ErrorCategory::Internal, "compile_specialized: the bounds decide no tree node");
    const std::string bytes = compiler::compile(s.pipeline, compiler::parse_strategy(strategy));
    return insert(id, key, bytes.data(), bytes.size());
}

}  // namespace pg_predict::runtime
