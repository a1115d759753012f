"""python3 -m pg_predict export model.joblib > model.json
   python3 -m pg_predict deploy --dsn "host=... dbname=..." --name churn model.joblib [--replace]
   python3 -m pg_predict deploy --dsn ... --name net net.pt --features a,b,c   # any artifact file
   python3 -m pg_predict operators [--readme README.md]   # the supported scikit-learn classes
"""

import argparse
import json
import sys

from ._common import ExportError


def _load(path, feature_names):
    import joblib
    from .export import export
    est = joblib.load(path)
    names = feature_names.split(",") if feature_names else None
    return export(est, names)


# A deployed file that is not a pickled scikit-learn model is sent as it is: text (LightGBM's
# model.txt, a JSON document) or bytes (ONNX, TorchScript, anything else).
JOBLIB_SUFFIXES = (".joblib", ".pkl", ".pickle")
TEXT_SUFFIXES = (".txt", ".json")


def _read_artifact(path):
    if path.endswith(TEXT_SUFFIXES):
        with open(path, encoding="utf-8") as f:
            return f.read()
    with open(path, "rb") as f:
        return f.read()


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m pg_predict",
                                 description="Export a fitted scikit-learn pipeline to "
                                 "pg_predict's sklearn format, or deploy it to PostgreSQL.")
    sub = ap.add_subparsers(dest="command", required=True)

    ex = sub.add_parser("export", help="write the JSON document to stdout (or -o FILE)")
    ex.add_argument("model", help="a joblib file holding a fitted estimator or pipeline")
    ex.add_argument("-o", "--output", help="write here instead of stdout")
    ex.add_argument("--features", help="comma-separated input names, for a model fitted "
                    "without them")

    dp = sub.add_parser("deploy", help="export and call create_model over a connection")
    dp.add_argument("model", help="a joblib file holding a fitted estimator or pipeline, or an "
                    "artifact file sent as it is (.txt/.json as text: LightGBM, JSON documents; "
                    "anything else as bytea: ONNX, TorchScript)")
    dp.add_argument("--format", help="create_model's format for an artifact file (default auto)")
    dp.add_argument("--dsn", required=True, help="libpq connection string or URI")
    dp.add_argument("--name", required=True, help="the model's name in PostgreSQL")
    dp.add_argument("--replace", action="store_true", help="replace a model of that name")
    dp.add_argument("--strategy", help="auto, native, gemm, tree_traversal, "
                    "perfect_tree_traversal")
    dp.add_argument("--features", help="comma-separated input names, for a model fitted "
                    "without them")

    op = sub.add_parser("operators", help="print the table of supported scikit-learn classes "
                        "(markdown), or rewrite it in a README")
    op.add_argument("--readme", help="rewrite the generated table in this file")

    args = ap.parse_args(argv)
    if args.command == "operators":
        from . import operators
        if args.readme:
            changed = operators.update_readme(args.readme)
            print(f"{args.readme}: {'updated' if changed else 'already current'}", file=sys.stderr)
        else:
            print(operators.markdown())
        return 0
    if args.command == "deploy" and not args.model.endswith(JOBLIB_SUFFIXES):
        return _deploy_artifact(args)
    try:
        doc = _load(args.model, args.features)
    except ExportError as e:
        print(f"pg_predict: {e}", file=sys.stderr)
        return 2
    if args.command == "export":
        text = json.dumps(doc, allow_nan=False)
        if args.output:
            with open(args.output, "w") as f:
                f.write(text + "\n")
        else:
            sys.stdout.write(text + "\n")
        return 0

    import psycopg
    from .deploy import deploy
    try:
        with psycopg.connect(args.dsn) as conn:
            deploy(conn, args.name, doc, replace=args.replace, strategy=args.strategy)
    except psycopg.Error as e:
        print(f"pg_predict: create_model failed: {e}", file=sys.stderr)
        return 1
    print(f"deployed {args.name!r} ({doc['task']}, {len(doc['inputs'])} inputs)",
          file=sys.stderr)
    return 0


def _deploy_artifact(args):
    import psycopg
    from .deploy import deploy
    options = {"features": args.features.split(",")} if args.features else None
    artifact = _read_artifact(args.model)
    try:
        with psycopg.connect(args.dsn) as conn:
            deploy(conn, args.name, artifact, replace=args.replace, strategy=args.strategy,
                   options=options, format=args.format or "auto")
    except psycopg.Error as e:
        print(f"pg_predict: create_model failed: {e}", file=sys.stderr)
        return 1
    kind = "text" if isinstance(artifact, str) else "bytea"
    print(f"deployed {args.name!r} ({len(artifact)} {'characters' if kind == 'text' else 'bytes'} "
          f"as {kind})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
