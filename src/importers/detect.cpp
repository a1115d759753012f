// Format detection for artifacts that are not JSON: what the first bytes (or a zip archive's
// directory) of each format look like. Cheap, never allocating, safe on any bytes (a fuzz target
// runs them over arbitrary input).
#include <cstdint>
#include <cstring>

#include "pg_predict/importers/import.hpp"

namespace pg_predict::importers {

namespace {

// Reads a protobuf varint at `pos`; false when it runs past the end or beyond 10 bytes.
bool read_varint(std::string_view b, size_t& pos, uint64_t& value) {
    value = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (pos >= b.size()) return false;
        const auto byte = static_cast<uint8_t>(b[pos++]);
        value |= static_cast<uint64_t>(byte & 0x7f) << shift;
        if ((byte & 0x80) == 0) return true;
    }
    return false;
}

uint32_t le16(std::string_view b, size_t at) {
    return static_cast<uint8_t>(b[at]) | static_cast<uint32_t>(static_cast<uint8_t>(b[at + 1])) << 8;
}
uint32_t le32(std::string_view b, size_t at) { return le16(b, at) | le16(b, at + 2) << 16; }
uint64_t le64(std::string_view b, size_t at) {
    return le32(b, at) | static_cast<uint64_t>(le32(b, at + 4)) << 32;
}

bool starts_with(std::string_view s, std::string_view prefix) {
    return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

// Where the central directory of a zip archive starts and how many entries it has; false when
// there is no (consistent) end-of-central-directory record.
bool zip_directory(std::string_view b, uint64_t& offset, uint64_t& entries) {
    constexpr size_t kEocd = 22;            // the record without its comment
    constexpr size_t kMaxComment = 0xffff;
    if (b.size() < kEocd) return false;
    const size_t lowest = b.size() - kEocd > kMaxComment ? b.size() - kEocd - kMaxComment : 0;
    for (size_t at = b.size() - kEocd + 1; at-- > lowest;) {
        if (b.compare(at, 4, "PK\x05\x06") != 0) continue;
        entries = le16(b, at + 10);
        offset = le32(b, at + 16);
        if (entries != 0xffff && offset != 0xffffffff) return true;
        // zip64 (torch.jit.save writes it for large archives): a locator just before the
        // record points at the zip64 end-of-central-directory record.
        if (at < 20 || b.compare(at - 20, 4, "PK\x06\x07") != 0) return false;
        const uint64_t record = le64(b, at - 20 + 8);
        if (record > b.size() || b.size() - record < 56 || b.compare(record, 4, "PK\x06\x06") != 0) return false;
        entries = le64(b, record + 32);
        offset = le64(b, record + 48);
        return true;
    }
    return false;
}

}  // namespace

bool looks_like_lightgbm(std::string_view text) {
    // Booster.save_model / model_to_string: "tree\nversion=v4\n..." (\r\n from Windows too).
    if (!starts_with(text, "tree")) return false;
    std::string_view rest = text.substr(4);
    if (starts_with(rest, "\r")) rest.remove_prefix(1);
    return starts_with(rest, "\nversion=v");
}

bool looks_like_onnx(std::string_view bytes) {
    // A serialized ModelProto starts with field 1, ir_version (a varint, 1..~10 so far); its
    // top-level fields then parse as protobuf up to the last byte, and one is field 7, graph.
    size_t pos = 0;
    bool graph = false;
    bool first = true;
    while (pos < bytes.size()) {
        uint64_t tag = 0;
        if (!read_varint(bytes, pos, tag)) return false;
        const uint64_t field = tag >> 3, wire = tag & 7;
        if (first && tag != 0x08) return false;
        if (field == 0) return false;
        uint64_t value = 0;
        switch (wire) {
        case 0:  // varint
            if (!read_varint(bytes, pos, value)) return false;
            if (first && (value == 0 || value > 1000)) return false;
            break;
        case 1:  // fixed64
            if (bytes.size() - pos < 8) return false;
            pos += 8;
            break;
        case 2:  // length-delimited
            if (!read_varint(bytes, pos, value) || value > bytes.size() - pos) return false;
            pos += static_cast<size_t>(value);
            graph = graph || field == 7;
            break;
        case 5:  // fixed32
            if (bytes.size() - pos < 4) return false;
            pos += 4;
            break;
        default: return false;  // groups (3, 4) are not in onnx.proto; 6, 7 do not exist
        }
        first = false;
    }
    return graph;
}

bool looks_like_torchscript(std::string_view bytes) {
    // torch.jit.save writes a zip archive "<name>/data.pkl", "<name>/code/__torch__/...",
    // "<name>/constants.pkl", ...: one top folder holding data.pkl and a code/ folder.
    if (!starts_with(bytes, "PK\x03\x04")) return false;
    uint64_t offset = 0, entries = 0;
    if (!zip_directory(bytes, offset, entries) || offset > bytes.size()) return false;
    bool data_pkl = false, code = false;
    size_t at = static_cast<size_t>(offset);
    for (uint64_t i = 0; i < entries && !(data_pkl && code); i++) {
        constexpr size_t kHeader = 46;
        if (bytes.size() - at < kHeader || bytes.compare(at, 4, "PK\x01\x02") != 0) return false;
        const size_t name_length = le16(bytes, at + 28);
        const size_t skip = kHeader + name_length + le16(bytes, at + 30) + le16(bytes, at + 32);
        if (bytes.size() - at < skip) return false;
        const std::string_view name = bytes.substr(at + kHeader, name_length);
        const size_t slash = name.find('/');
        if (slash != std::string_view::npos && slash > 0) {
            const std::string_view inside = name.substr(slash + 1);
            data_pkl = data_pkl || inside == "data.pkl";
            code = code || starts_with(inside, "code/");
        }
        at += skip;
    }
    return data_pkl && code;
}

}  // namespace pg_predict::importers
