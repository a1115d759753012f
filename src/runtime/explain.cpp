// explain_model: what the optimizer made of a stored spec, and which columns the model reads.
// Torch-free: it only re-runs the (deterministic) optimizer on the catalog's spec.
#include <cstdlib>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "pg_predict/common/error.hpp"
#include "pg_predict/optimizer/optimize.hpp"
#include "pg_predict/runtime/api.hpp"
#include "pg_predict/text/vectorizer.hpp"

namespace pg_predict::runtime {

char* explain_model(const char* name, const char* spec_json, size_t length,
                    const std::vector<std::string>& columns, const std::vector<int32_t>& unused) {
    using nlohmann::json;
    const spec::Pipeline before = spec::from_json(std::string(spec_json, length));
    spec::validate(before);
    optimizer::Report report;
    const spec::Pipeline after = optimizer::optimize(before, &report);

    json passes = json::array();
    for (const optimizer::PassReport& r : report.passes) passes.push_back({{"pass", r.pass}, {"changes", r.changes}});
    const std::set<int32_t> skipped(unused.begin(), unused.end());
    json read = json::array(), not_read = json::array();
    for (size_t f = 0; f < columns.size(); ++f)
        (skipped.count(static_cast<int32_t>(f)) ? not_read : read).push_back(columns[f]);

    json out;
    out["model"] = name;
    out["inputs"] = columns.size();
    out["columns_read"] = read;
    out["columns_not_read"] = not_read;
    if (!before.import_paths.empty()) out["import_paths"] = before.import_paths;
    out["passes"] = passes;
    out["before"] = json::parse(spec::to_json(before));
    out["after"] = json::parse(spec::to_json(after));
    // A text vectorizer's vocabulary and projection (10^5 - 10^6 entries) as their sizes.
    for (const char* which : {"before", "after"}) {
        json& doc = out[which];
        if (!doc.contains("text_vectorizers")) continue;
        for (json& v : doc["text_vectorizers"]) {
            json& body = v["vectorizer"];
            v["description"] = text::describe_vectorizer(body);
            for (const char* key : {"vocabulary", "idf"})
                if (body.contains(key)) body[key] = std::to_string(body[key].size()) + " values";
            if (body.contains("idfs"))
                for (json& idf : body["idfs"]) idf = std::to_string(idf.size()) + " values";
            if (body.contains("projection"))
                for (const char* key : {"term_begin", "column", "weight"})
                    body["projection"][key] = std::to_string(body["projection"][key].size()) + " values";
        }
    }
    const std::string text = out.dump();
    char* result = static_cast<char*>(std::malloc(text.size() + 1));
    if (result == nullptr) fail(ErrorCategory::Runtime, "explain_model: out of memory");
    std::memcpy(result, text.c_str(), text.size() + 1);
    return result;
}

}  // namespace pg_predict::runtime
