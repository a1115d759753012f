// The operator table: (domain, op_type) → handler. Each family file adds its own rows; an
// operator not in the table is refused at create_model, naming it and the node.
#include <map>
#include <string>

#include "graph.hpp"

namespace pg_predict::importers::onnx_import {

namespace {

std::map<std::string, Handler> build_table() {
    std::map<std::string, Handler> table;
    add_tree_ops(table);
    add_linear_ops(table);
    add_svm_ops(table);
    add_featurizer_ops(table);
    add_tensor_ops(table);
    add_general_ops(table);
    return table;
}

}  // namespace

// Keys are "ai.onnx.ml:Name" for the ML domain and "Name" for the default one.
const Handler* find_handler(const std::string& domain, const std::string& op_type) {
    static const std::map<std::string, Handler> table = build_table();
    auto it = table.find(domain.empty() ? op_type : domain + ":" + op_type);
    return it == table.end() ? nullptr : &it->second;
}

}  // namespace pg_predict::importers::onnx_import
