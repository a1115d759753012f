#!/usr/bin/python3
"""Writes regress/unit/text_fixtures.hpp: scikit-learn 1.2's own analyzers and HashingVectorizer
on multilingual documents (accents, case, Greek final sigma, Turkish dotted I, ligatures, CJK,
Hangul, emoji, combining marks, white space of every kind, empty text) and on random ones, for
regress/unit/text/analyzer_test.cpp. Run: /usr/bin/python3 regress/unit/gen_text_fixtures.py
"""

import json
import os
import random

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer, HashingVectorizer, TfidfVectorizer
from sklearn.preprocessing import Binarizer
from sklearn.utils import murmurhash3_32

HERE = os.path.dirname(os.path.abspath(__file__))

DOCS = [
    "",
    "   ",
    "Hello, World! Hello again.",
    "Café crème brûlée — naïve façade, coöperate",
    "ΟΔΥΣΣΕΥΣ Σ σ ΣΑΣ. ΑΣ-Σ 'Σ' ὈΔΥΣΣΕΎΣ",
    "İstanbul ISTANBUL ıi İİ",
    "ﬁnance ﬂow Ⅻ ①②③ ＦＵＬＬ　ｗｉｄｔｈ",
    "東京は日本の首都です。 北京 上海",
    "한국어 텍스트 처리 안녕하세요",
    "emoji 😀 👍🏽 family 👨‍👩‍👧 flags 🇫🇷🇩🇪",
    "tabs\tand\nnewlines\r\n\x0bvertical\x0cfeed\u2028line\u2029para\u00a0nbsp\u3000ideo",
    "don't stop-words it's e-mail user_name snake_case __init__ 3.14 1,000 x2",
    "a b c d e f g",
    "e\u0301 a\u0300\u0316 n\u0303 combining\u0338marks",
    "Ǆemal ǅ ǆ ß ẞ ﬀ",
    "the and of to in is you that it he was for on are as with his they",
    "x" * 300 + " " + "longword" * 40,
    "٣٤٥ arabic-indic digits ١٢ and ⅷ roman",
    "Ａ１ ＿ ˇ ʰ ꜰ",
]

CONFIGS = [
    {"analyzer": "word"},
    {"analyzer": "word", "ngram_range": [1, 2], "lowercase": False},
    {"analyzer": "word", "ngram_range": [2, 3]},
    {"analyzer": "word", "strip_accents": "ascii"},
    {"analyzer": "word", "strip_accents": "unicode"},
    {"analyzer": "word", "stop_words": "english"},
    {"analyzer": "word", "stop_words": ["hello", "σας", "the"], "ngram_range": [1, 2]},
    {"analyzer": "word", "token_pattern": r"(?u)\b\w+\b"},
    {"analyzer": "word", "token_pattern": r"\S+"},
    {"analyzer": "word", "token_pattern": r"\w{3,}"},
    {"analyzer": "char", "ngram_range": [1, 3]},
    {"analyzer": "char", "ngram_range": [2, 2], "strip_accents": "unicode", "lowercase": False},
    {"analyzer": "char_wb", "ngram_range": [2, 4]},
    {"analyzer": "char_wb", "ngram_range": [1, 5], "strip_accents": "ascii"},
]


def random_docs(n, seed):
    """Documents of code points drawn from blocks of every kind."""
    rng = random.Random(seed)
    blocks = [(0x20, 0x7E), (0xA0, 0x24F), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x4FF),
              (0x1E00, 0x1FFF), (0x2000, 0x206F), (0x2150, 0x218F), (0x3000, 0x303F),
              (0x4E00, 0x4E80), (0xAC00, 0xAC80), (0xFB00, 0xFB4F), (0xFF00, 0xFFEF),
              (0x1F300, 0x1F64F), (0x10400, 0x1044F), (0x9, 0xD)]
    docs = []
    for _ in range(n):
        k = rng.randint(0, 60)
        cps = []
        for _ in range(k):
            lo, hi = rng.choice(blocks)
            cps.append(rng.randint(lo, hi))
        docs.append("".join(chr(c) for c in cps))
    return docs


def pattern_config(c):
    """The C++ AnalyzerConfig fields for a config's token_pattern."""
    p = c.get("token_pattern", r"(?u)\b\w\w+\b")
    table = {r"(?u)\b\w\w+\b": ("word", 2), r"(?u)\b\w+\b": ("word", 1), r"\S+": ("nonspace", 1),
             r"\w{3,}": ("word", 3)}
    return table[p]


def main():
    docs = DOCS + random_docs(60, 47)
    cases = []
    for c in CONFIGS:
        kwargs = {k: (tuple(v) if k == "ngram_range" else v) for k, v in c.items()}
        v = CountVectorizer(**kwargs)
        analyze = v.build_analyzer()
        stop = v.get_stop_words()
        token_class, min_len = pattern_config(c)
        cfg = {"analyzer": c["analyzer"], "ngram_range": list(c.get("ngram_range", [1, 1])),
               "lowercase": c.get("lowercase", True), "strip_accents": c.get("strip_accents") or "none",
               "token_class": token_class, "min_token_length": min_len,
               "stop_words": sorted(stop) if stop else []}
        cases.append({"config": cfg, "terms": [sorted(analyze(d)) for d in docs]})
    hashing = []
    for kwargs in [{"n_features": 64}, {"n_features": 1 << 20, "alternate_sign": False, "ngram_range": (1, 2)},
                   {"n_features": 7, "binary": True}, {"n_features": 5, "analyzer": "char_wb", "ngram_range": (2, 3)}]:
        hv = HashingVectorizer(norm=None, **kwargs)
        X = hv.transform(docs).tocsr()
        X.sort_indices()
        rows = [[[int(j), float(x)] for j, x in zip(X.indices[X.indptr[i]:X.indptr[i + 1]],
                                                     X.data[X.indptr[i]:X.indptr[i + 1]])]
                for i in range(len(docs))]
        hashing.append({"n_features": kwargs["n_features"], "alternate_sign": kwargs.get("alternate_sign", True),
                        "binary": kwargs.get("binary", False), "analyzer": kwargs.get("analyzer", "word"),
                        "ngram_range": list(kwargs.get("ngram_range", (1, 1))), "rows": rows})
    # Whole rows of the TF-IDF transforms, in float32 (rounded as scikit-learn's float32 code
    # rounds) and float64, with a Binarizer after some.
    weighted, some = [], docs[:35]
    for kwargs, threshold in [({"dtype": np.float32}, None),
                              ({"dtype": np.float32, "sublinear_tf": True, "norm": "l1", "ngram_range": (1, 2)}, None),
                              ({"dtype": np.float32, "smooth_idf": False, "binary": True, "analyzer": "char_wb",
                                "ngram_range": (2, 3)}, None),
                              ({"dtype": np.float32}, 0.1),
                              ({}, 0.1),
                              ({"dtype": np.float32, "sublinear_tf": True, "use_idf": False}, None)]:
        tv = TfidfVectorizer(**kwargs).fit(some)
        X = tv.transform(some)
        if threshold is not None:
            X = Binarizer(threshold=threshold).transform(X)
        X = X.tocsr()
        X.sort_indices()
        vocabulary = [None] * len(tv.vocabulary_)
        for term, i in tv.vocabulary_.items():
            vocabulary[i] = term
        ops = (["binary"] if tv.binary else []) + (["sublinear"] if tv.sublinear_tf else []) + \
            (["idf"] if tv.use_idf else []) + ([tv.norm] if tv.norm else []) + (["threshold"] if threshold else [])
        rows = [[[int(j), float(x)] for j, x in zip(X.indices[X.indptr[i]:X.indptr[i + 1]],
                                                     X.data[X.indptr[i]:X.indptr[i + 1]])]
                for i in range(len(some))]
        weighted.append({"analyzer": tv.analyzer, "ngram_range": list(tv.ngram_range), "vocabulary": vocabulary,
                         "idf": [float(x) for x in tv.idf_] if tv.use_idf else [], "ops": ops,
                         "float32": np.dtype(tv.dtype) == np.float32, "threshold": threshold or 0.0, "rows": rows})
    tokens = sorted({t for d in docs for t in CountVectorizer(analyzer="char_wb", ngram_range=(1, 3)).build_analyzer()(d)})
    murmur = [[t, int(np.int64(murmurhash3_32(t, seed=0)))] for t in tokens[:400]]
    doc = {"documents": docs, "cases": cases, "hashing": hashing, "weighted": weighted, "murmur": murmur}
    text = json.dumps(doc, ensure_ascii=True)
    chunks = [text[i:i + 12000] for i in range(0, len(text), 12000)]
    with open(os.path.join(HERE, "text_fixtures.hpp"), "w") as f:
        f.write("// Generated by gen_text_fixtures.py (scikit-learn's analyzers and HashingVectorizer): do not edit.\n")
        f.write("#pragma once\n\n// The JSON, in pieces (a string literal has a length limit).\n")
        f.write("inline const char* const kTextFixtureParts[] = {\n")
        for ch in chunks:
            f.write('    R"json(' + ch + ')json",\n')
        f.write("};\n")


if __name__ == "__main__":
    main()
