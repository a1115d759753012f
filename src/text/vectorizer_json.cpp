// spec::TextVectorizer's JSON -> a text::Vectorizer and its projection (text/vectorizer.hpp).
#include <cmath>
#include <string>

#include "pg_predict/common/error.hpp"
#include "pg_predict/text/vectorizer.hpp"

namespace pg_predict::text {

namespace {

[[noreturn]] void malformed(const std::string& what) { fail(ErrorCategory::InvalidModel, "text vectorizer: " + what); }

AnalyzerConfig analyzer_of(const nlohmann::json& a) {
    AnalyzerConfig c;
    const std::string kind = a.at("analyzer");
    if (kind == "word") c.kind = AnalyzerKind::Word;
    else if (kind == "char") c.kind = AnalyzerKind::Char;
    else if (kind == "char_wb") c.kind = AnalyzerKind::CharWb;
    else malformed("analyzer \"" + kind + "\"");
    c.min_n = a.at("ngram_range").at(0);
    c.max_n = a.at("ngram_range").at(1);
    c.lowercase = a.at("lowercase");
    const std::string accents = a.value("strip_accents", "none");
    if (accents == "ascii") c.strip_accents = StripAccents::Ascii;
    else if (accents == "unicode") c.strip_accents = StripAccents::Unicode;
    else if (accents != "none") malformed("strip_accents \"" + accents + "\"");
    if (c.kind == AnalyzerKind::Word) {
        c.token_class = a.at("token_class") == "word" ? TokenClass::Word : TokenClass::NonSpace;
        c.min_token_length = a.at("min_token_length");
        c.stop_words = a.at("stop_words").get<std::vector<std::string>>();
    }
    return c;
}

}  // namespace

ParsedVectorizer parse_vectorizer(const nlohmann::json& v) {
    ParsedVectorizer out;
    try {
        VectorizerSpec& s = out.spec;
        s.analyzer = analyzer_of(v.at("analyzer"));
        if (v.contains("hashing")) {
            s.hash_features = v["hashing"].at("n_features");
            s.alternate_sign = v["hashing"].at("alternate_sign");
            if (s.hash_features < 1) malformed("n_features must be positive");
        } else {
            s.vocabulary = v.at("vocabulary").get<std::vector<std::string>>();
        }
        for (const auto& op : v.at("ops")) {
            const std::string name = op;
            if (name == "binary") s.ops.push_back(TextOp::Binary);
            else if (name == "sublinear") s.ops.push_back(TextOp::Sublinear);
            else if (name == "idf") s.ops.push_back(TextOp::Idf);
            else if (name == "l1") s.ops.push_back(TextOp::NormL1);
            else if (name == "l2") s.ops.push_back(TextOp::NormL2);
            else if (name == "threshold") s.ops.push_back(TextOp::Threshold);
            else malformed("transform \"" + name + "\"");
        }
        if (v.contains("idfs")) s.idf = v["idfs"].get<std::vector<std::vector<double>>>();
        else if (v.contains("idf")) s.idf = {v["idf"].get<std::vector<double>>()};  // written before 0.x: one
        if (v.contains("threshold")) s.threshold = v["threshold"];
        if (!(s.threshold >= 0.0) || !std::isfinite(s.threshold))
            malformed("threshold must be finite and >= 0 (a term absent from the text stays 0)");
        if (v.contains("float32")) s.float32 = v["float32"];
        out.projection = parse_projection(v.at("projection"), s.width());
    } catch (const nlohmann::json::exception& e) {
        malformed(e.what());
    }
    return out;
}

Projection parse_projection(const nlohmann::json& p, int64_t V) {
    Projection pr;
    try {
        pr.width = p.at("width");
        pr.term_begin = p.at("term_begin").get<std::vector<int64_t>>();
        pr.column = p.at("column").get<std::vector<int32_t>>();
        pr.weight = p.at("weight").get<std::vector<double>>();
        pr.offset = p.at("offset").get<std::vector<double>>();
    } catch (const nlohmann::json::exception& e) {
        malformed(e.what());
    }
    if (pr.width < 1 || static_cast<int64_t>(pr.term_begin.size()) != V + 1 || pr.term_begin.front() != 0 ||
        pr.term_begin.back() != static_cast<int64_t>(pr.column.size()) || pr.column.size() != pr.weight.size() ||
        static_cast<int64_t>(pr.offset.size()) != pr.width)
        malformed("the projection's arrays do not fit " + std::to_string(V) + " terms");
    for (size_t i = 0; i + 1 < pr.term_begin.size(); ++i)
        if (pr.term_begin[i] > pr.term_begin[i + 1]) malformed("the projection's term_begin decreases");
    for (int32_t c : pr.column)
        if (c < 0 || c >= pr.width) malformed("a projection column is outside [0, " + std::to_string(pr.width) + ")");
    return pr;
}

std::string describe_vectorizer(const nlohmann::json& v) {
    try {
        const nlohmann::json& a = v.at("analyzer");
        std::string ops;
        for (const auto& op : v.at("ops")) ops += (ops.empty() ? "" : "+") + op.get<std::string>();
        const int64_t n = v.contains("hashing") ? v["hashing"].at("n_features").get<int64_t>()
                                                : static_cast<int64_t>(v.at("vocabulary").size());
        return std::string(v.contains("hashing") ? "hashing" : "vocabulary") + " " + a.at("analyzer").get<std::string>() +
               " " + std::to_string(a.at("ngram_range").at(0).get<int>()) + "-" +
               std::to_string(a.at("ngram_range").at(1).get<int>()) + "-grams, " + std::to_string(n) +
               (v.contains("hashing") ? " features" : " terms") + (ops.empty() ? "" : ", " + ops) +
               (v.value("float32", false) ? ", float32" : "") + " -> " +
               std::to_string(v.at("projection").at("width").get<int>()) + " columns";
    } catch (const nlohmann::json::exception&) {
        return "text vectorizer";
    }
}

}  // namespace pg_predict::text
