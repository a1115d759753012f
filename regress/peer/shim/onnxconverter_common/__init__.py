"""Stand-in for onnxconverter-common (a dependency of Hummingbird that Debian lacks): only the
tensor type names test_sklearn_pipeline.py and test_sklearn_label_encoder_converter.py import
at module level. The tests that use them need onnxruntime and are skipped without it."""
