"""The ONNX input type names, as plain records (see __init__.py)."""


class _TensorType:
    def __init__(self, shape=None, doc_string=""):
        self.shape = shape
        self.doc_string = doc_string


class FloatTensorType(_TensorType): pass
class DoubleTensorType(_TensorType): pass
class Int32TensorType(_TensorType): pass
class Int64TensorType(_TensorType): pass
class StringTensorType(_TensorType): pass
class BooleanTensorType(_TensorType): pass
