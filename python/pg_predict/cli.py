"""The `pg_predict` command (installed by `pip install ./python`; also `python3 -m pg_predict`).

    pg_predict export model.joblib [-o model.json] [--features a,b,c]
    pg_predict deploy --dsn "host=... dbname=..." --name churn model.joblib [--no-deploy]
    pg_predict deploy --dsn ... --name gbm model.txt      # XGBoost JSON, LightGBM, ONNX, ... as is
    pg_predict operators [--readme docs/operators.md]     # the supported scikit-learn classes
    pg_predict operators --readme python/README.md        # its overview and refusals
    pg_predict --version

Exit status: 0 done; 1 the database refused (create_model's error, no extension); 2 a usage
error, or a model file that cannot be read or exported; 3 no connection to the server. Every
failure is one line on stderr starting 'pg_predict: '.
"""

import argparse
import json
import os
import sys

from . import __version__
from ._common import ExportError

EXIT_DATABASE, EXIT_MODEL, EXIT_CONNECT = 1, 2, 3

# A pickled model (joblib.dump / pickle.dump) is loaded; any other file is sent to create_model
# as it is: text (XGBoost's JSON, LightGBM's model.txt) or bytes (ONNX, TorchScript).
PICKLE_SUFFIXES = (".joblib", ".pkl", ".pickle")
TEXT_SUFFIXES = (".txt", ".json")


class Failure(Exception):
    """A failure the command reports in one line, with its exit status."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except Failure as e:
        print(f"pg_predict: {e}", file=sys.stderr)
        return e.status


def _parser():
    ap = argparse.ArgumentParser(prog="pg_predict",
                                 description="Export a fitted scikit-learn pipeline to "
                                 "pg_predict's sklearn format, or deploy a model to PostgreSQL.")
    ap.add_argument("--version", action="version", version=f"pg_predict {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)

    ex = sub.add_parser("export", help="write the JSON document to stdout (or -o FILE)")
    ex.add_argument("model", help="a joblib/pickle file holding a fitted estimator or pipeline")
    ex.add_argument("-o", "--output", help="write here instead of stdout")
    ex.add_argument("--features", help="comma-separated input names, for a model fitted "
                    "without them")
    ex.set_defaults(run=_export)

    dp = sub.add_parser("deploy", help="export if needed and call create_model over a connection")
    dp.add_argument("model", help="a joblib/pickle file holding a fitted scikit-learn estimator or "
                    "pipeline (or an XGBoost model object), or an artifact file sent as it is "
                    "(.txt/.json as text: XGBoost JSON, LightGBM; anything else as bytea: ONNX, "
                    "TorchScript)")
    dp.add_argument("--dsn", default="", help="libpq connection string or URI (default: the "
                    "PG* environment variables, like psql)")
    dp.add_argument("--name", required=True, help="the model's name in PostgreSQL")
    dp.add_argument("--replace", action="store_true", help="accepted from before versions: a "
                    "model of that name gets a new version either way")
    dp.add_argument("--no-deploy", action="store_true", help="add the new version of an existing "
                    "name without deploying it (deploy_model() in SQL later)")
    dp.add_argument("--format", help="create_model's format for an artifact file (default auto)")
    dp.add_argument("--strategy", help="auto, native, gemm, tree_traversal, "
                    "perfect_tree_traversal")
    dp.add_argument("--features", help="comma-separated input names, for a model fitted "
                    "without them (or a TorchScript module's inputs)")
    dp.set_defaults(run=_deploy)

    op = sub.add_parser("operators", help="print the table of supported scikit-learn classes "
                        "(markdown), or rewrite the blocks generated from the registry in a page "
                        "(docs/operators.md, python/README.md)")
    op.add_argument("--readme", help="rewrite the generated blocks in this file (the table in "
                    "docs/operators.md; the overview and the refusals in python/README.md)")
    op.set_defaults(run=_operators)
    return ap


# ---- subcommands ------------------------------------------------------------------------------

def _export(args):
    if not args.model.endswith(PICKLE_SUFFIXES):
        _check_readable(args.model)
        raise Failure(EXIT_MODEL, f"{args.model}: export reads a pickled scikit-learn model "
                      f"({', '.join(PICKLE_SUFFIXES)}); other model files are deployed as they "
                      "are (pg_predict deploy)")
    doc = _exported(_load_pickle(args.model), args.features)
    text = json.dumps(doc, allow_nan=False) + "\n"
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            raise Failure(EXIT_MODEL, f"cannot write {args.output}: {e.strerror}") from None
    else:
        sys.stdout.write(text)
    return 0


def _deploy(args):
    from .deploy import deploy, is_artifact_object, to_artifact
    features = args.features.split(",") if args.features else None
    options = None
    fmt = args.format
    if args.model.endswith(PICKLE_SUFFIXES):
        if args.format:
            raise Failure(EXIT_MODEL, "--format applies to artifact files, not to a pickled model")
        model = _load_pickle(args.model)
        if is_artifact_object(model):  # an XGBoost model: sent in its own format
            what = type(model).__name__
            try:
                _, model, fmt = to_artifact(model)
            except ValueError as e:
                raise Failure(EXIT_MODEL, f"cannot deploy {args.model}: {e}") from None
            options = {"features": features} if features else None  # create_model renames
        else:
            model = _exported(model, features)
            what = f"{model['task']}, {len(model['inputs'])} inputs"
    else:
        model = _read_artifact(args.model)
        options = {"features": features} if features else None
        what = (f"{len(model)} characters as text" if isinstance(model, str)
                else f"{len(model)} bytes as bytea")
    with _connect(args.dsn) as conn:
        try:
            _check_extension(conn)
            deploy(conn, args.name, model, replace=args.replace, strategy=args.strategy,
                   options=options, format=fmt, stage=args.no_deploy)
        except _psycopg().Error as e:
            raise Failure(EXIT_DATABASE, f"create_model failed: {_server_message(e)}") from None
    print(f"deployed {args.name!r} ({what})", file=sys.stderr)
    return 0


def _operators(args):
    from . import operators
    if args.readme:
        _check_readable(args.readme)
        try:
            changed = operators.update_readme(args.readme)
        except ValueError as e:  # no generated block in the file
            raise Failure(EXIT_MODEL, str(e)) from None
        print(f"{args.readme}: {'updated' if changed else 'already current'}", file=sys.stderr)
    else:
        print(operators.markdown())
    return 0


# ---- model files ------------------------------------------------------------------------------

def _check_readable(path):
    if not os.path.exists(path):
        raise Failure(EXIT_MODEL, f"{path}: no such file")
    if os.path.isdir(path):
        raise Failure(EXIT_MODEL, f"{path}: is a directory, not a model file")


def _load_pickle(path):
    import joblib
    _check_readable(path)
    try:
        return joblib.load(path)
    except OSError as e:
        raise Failure(EXIT_MODEL, f"cannot read {path}: {e.strerror or e}") from None
    except Exception as e:  # unpickling raises whatever the pickled classes raise
        raise Failure(EXIT_MODEL, f"cannot load {path} as a pickled model: "
                      f"{type(e).__name__}: {e}") from None


def _exported(estimator, features):
    from .export import export
    try:
        return export(estimator, features)
    except ExportError as e:
        raise Failure(EXIT_MODEL, str(e)) from None


def _read_artifact(path):
    _check_readable(path)
    try:
        if path.endswith(TEXT_SUFFIXES):
            with open(path, encoding="utf-8") as f:
                return f.read()
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise Failure(EXIT_MODEL, f"cannot read {path}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise Failure(EXIT_MODEL, f"{path} is not UTF-8 text ({e.reason} at byte {e.start}): "
                      "rename a binary model so it does not end in .txt/.json") from None


# ---- the database -----------------------------------------------------------------------------

def _psycopg():
    import psycopg
    return psycopg


def _connect(dsn):
    psycopg = _psycopg()
    try:
        return psycopg.connect(dsn)  # the with-block commits, or rolls back on an error
    except psycopg.Error as e:
        raise Failure(EXIT_CONNECT, f"cannot connect to the server: {_server_message(e)}") from None


def _check_extension(conn):
    """The extension must be installed; a version other than ours is worth a warning (the
    document format and create_model's options follow the extension's version)."""
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'pg_predict'").fetchone()
    if row is None:
        raise Failure(EXIT_DATABASE, "the pg_predict extension is not installed in database "
                      f"{conn.info.dbname!r} (CREATE EXTENSION pg_predict)")
    if row[0] != __version__:
        print(f"pg_predict: warning: this client is version {__version__}, the database's "
              f"extension {row[0]} (ALTER EXTENSION pg_predict UPDATE, or a matching client)",
              file=sys.stderr)


def _server_message(e):
    """psycopg's message in one line, with the server's hint where it gave one."""
    text = "; ".join(line.strip() for line in str(e).splitlines() if line.strip())
    diag = getattr(e, "diag", None)
    hint = diag.message_hint if diag is not None else None
    if getattr(e, "sqlstate", None) == "42710":  # duplicate_object: a server from before versions
        hint = "use --replace to replace it"
    if hint and hint not in text:
        text += f" (hint: {hint})"
    return text
