# SPDX-License-Identifier: BSD-3-Clause
# Signatures and stubs (docs/python.md): every callable of hdal._hdal and every
# method of its types has a text signature (inspect.signature works), found by
# introspection, so that a new one without "name(sig)\n--\n\n" fails here; and
# the stubs (hdal/__init__.pyi, hdal/_hdal.pyi, read with ast) name the same
# parameters, of the same kinds, with defaults in the same places, the same
# attributes and the same module names.  mypy's stubtest checks the same and
# more where it is installed (the interop lab); this runs everywhere.
import ast
import datetime
import inspect
import os
import sys
import types

import pytest

import hdal
import hdal._hdal as ext

STUB_DIR = os.path.dirname(hdal.__file__)
P = inspect.Parameter
# What CPython's structseq machinery gives every named tuple of C (BackendState's
# __new__, __reduce__, __replace__, n_fields, ...): not hdal's to sign.
STRUCTSEQ_NAMES = set(vars(type(sys.version_info)))
CAPSULE = type(datetime.datetime_CAPI)  # types.CapsuleType from Python 3.13


def parse(name):
    with open(os.path.join(STUB_DIR, name)) as f:
        return ast.parse(f.read(), name)


def stub_defs(body):
    """name -> ast node (FunctionDef, ClassDef, AnnAssign, Assign or an alias of an import)."""
    out = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = node
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                if a.asname == a.name:  # an explicit re-export: `from m import X as X`
                    out[a.name] = a
    return out


PACKAGE = stub_defs(parse("__init__.pyi").body)
EXTENSION = stub_defs(parse("_hdal.pyi").body)


def is_property(node):
    return isinstance(node, ast.FunctionDef) and any(
        isinstance(d, ast.Name) and d.id == "property" for d in node.decorator_list)


def stub_params(fn, drop_first=False):
    """[(name, kind, has_default, default if a constant)] of a stub's def."""
    a = fn.args
    positional = [(x, P.POSITIONAL_ONLY) for x in a.posonlyargs] + [(x, P.POSITIONAL_OR_KEYWORD) for x in a.args]
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    out = [(x.arg, kind, d is not None, d) for (x, kind), d in zip(positional, defaults)]
    if a.vararg:
        out.append((a.vararg.arg, P.VAR_POSITIONAL, False, None))
    out += [(x.arg, P.KEYWORD_ONLY, d is not None, d) for x, d in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg:
        out.append((a.kwarg.arg, P.VAR_KEYWORD, False, None))
    if drop_first:
        out = out[1:]
    return [(n, k, has, d.value if isinstance(d, ast.Constant) and d.value is not Ellipsis else None)
            for n, k, has, d in out]


def runtime_params(sig, drop_first=False):
    params = list(sig.parameters.values())[1 if drop_first else 0:]
    return [(p.name, p.kind, p.default is not P.empty, None if p.default is P.empty else p.default)
            for p in params]


def same_params(stub, runtime):
    """Names, kinds, defaults' places; a default's value where the stub gives a constant."""
    if [x[:3] for x in stub] != [x[:3] for x in runtime]:
        return False
    return all(s[3] is None or s[3] == r[3] for s, r in zip(stub, runtime))


def module_callables():
    """Every function of the extension, public or private, found by looking."""
    return sorted(n for n, v in vars(ext).items() if isinstance(v, types.BuiltinFunctionType))


def module_types():
    return sorted(n for n, v in vars(ext).items() if isinstance(v, type))


def own_types():
    return [n for n in module_types() if not issubclass(getattr(ext, n), BaseException)]


def methods(cls):
    """(name, object) of each callable the type defines itself, but for what a
    named tuple of C has from CPython."""
    out = []
    for name, v in vars(cls).items():
        if issubclass(cls, tuple) and name in STRUCTSEQ_NAMES:
            continue
        if callable(v) and not isinstance(v, type) and name not in ("__new__", "__init__"):  # test_constructor's
            out.append((name, getattr(cls, name)))
    return sorted(out)


def test_found_by_introspection():
    # The enumeration finds what it must (a broken one would pass everything).
    assert {"from_dlpack", "devices", "default_context", "dlpack_device_type_name", "_table",
            "_exchange_counts"} <= set(module_callables())
    assert {"Context", "Device", "Buffer", "BackendState"} <= set(own_types())
    assert {"to_device", "__dlpack__", "__dlpack_device__"} <= {n for n, _ in methods(hdal.Buffer)}
    assert {"devices", "device", "backends", "backend_states"} <= {n for n, _ in methods(hdal.Context)}
    assert {"memory_stats", "trim"} <= {n for n, _ in methods(hdal.Device)}


@pytest.mark.parametrize("name", module_callables())
def test_function_signature(name):
    f = getattr(ext, name)
    sig = inspect.signature(f)  # raises ValueError without a text signature
    # The docstring stays, without the signature block.
    assert f.__doc__ and "\n--\n" not in f.__doc__ and len(f.__doc__) > 20, f.__doc__
    stubs = PACKAGE if not name.startswith("_") else EXTENSION
    node = stubs.get(name)
    assert isinstance(node, ast.FunctionDef), "%s is not a def of the stubs" % name
    assert same_params(stub_params(node), runtime_params(sig)), (name, ast.unparse(node.args), str(sig))


@pytest.mark.parametrize("cls", own_types())
def test_method_signatures(cls):
    t = getattr(ext, cls)
    stub = PACKAGE.get(cls)
    assert isinstance(stub, ast.ClassDef), "%s is not a class of hdal/__init__.pyi" % cls
    defs = stub_defs(stub.body)
    for name, m in methods(t):
        sig = inspect.signature(m)  # every method of the type, slots' wrappers included
        if isinstance(vars(t)[name], types.MethodDescriptorType):  # a PyMethodDef of hdal's
            assert m.__doc__ and "\n--\n" not in m.__doc__, (cls, name, m.__doc__)
            assert name in defs, "%s.%s is not in the stub" % (cls, name)
        node = defs.get(name)
        if node is None:
            continue  # a slot's wrapper the stub leaves to object (__repr__, __lt__, ...)
        assert isinstance(node, ast.FunctionDef) and not is_property(node), (cls, name)
        assert same_params(stub_params(node), runtime_params(sig)), \
            (cls, name, ast.unparse(node.args), str(sig))
    # The other way: each def of the stub is a method of the runtime (PEP 688's
    # names are the runtime's from Python 3.12 only).
    for name, node in defs.items():
        if isinstance(node, ast.FunctionDef) and not is_property(node) and name not in ("__new__", "__init__"):
            if name in ("__buffer__", "__release_buffer__") and sys.version_info < (3, 12):
                continue
            assert callable(getattr(t, name, None)), "%s.%s of the stub is not at runtime" % (cls, name)


@pytest.mark.parametrize("cls", own_types())
def test_attributes(cls):
    """Getters and members are the stub's properties, and the stub's properties are there."""
    t = getattr(ext, cls)
    defs = stub_defs(PACKAGE[cls].body)
    runtime = {n for n, v in vars(t).items()
               if isinstance(v, (types.GetSetDescriptorType, types.MemberDescriptorType)) and not n.startswith("__")}
    stub = {n for n, node in defs.items() if is_property(node)}
    assert runtime == stub, cls
    # Class-level data (the exchange API's capsules): annotated in the stub.
    data = {n for n, v in vars(t).items() if isinstance(v, CAPSULE)}
    assert data <= {n for n, node in defs.items() if isinstance(node, ast.AnnAssign)}, cls


@pytest.mark.parametrize("cls", own_types())
def test_constructor(cls):
    """A type with a constructor of hdal's has a class signature, the stub's
    __new__ or __init__; one without takes no call."""
    t = getattr(ext, cls)
    defs = stub_defs(PACKAGE[cls].body)
    ctor = defs.get("__new__") or defs.get("__init__")
    if issubclass(t, tuple):  # a named tuple of C: CPython's constructor, typeshed's structseq in the stub
        assert "structseq" in ast.unparse(PACKAGE[cls].bases[0]), cls
        assert ctor is None
        return
    if t.__new__ is object.__new__:  # Py_TPFLAGS_DISALLOW_INSTANTIATION: made by hdal only
        with pytest.raises(TypeError, match="cannot create"):
            t()
        assert ctor is None, "%s takes no call, but its stub has a constructor" % cls
        return
    sig = inspect.signature(t)
    assert t.__text_signature__, cls
    assert t.__doc__ and "\n--\n" not in t.__doc__
    assert ctor is not None, "%s: no __new__ or __init__ in the stub" % cls
    assert same_params(stub_params(ctor, drop_first=True), runtime_params(sig)), \
        (cls, ast.unparse(ctor.args), str(sig))


def test_context_signature():
    assert str(inspect.signature(hdal.Context)) == "(backends=None, backend_path=None, selector=None)"
    assert str(inspect.signature(hdal.from_dlpack)) == "(x, /, *, device=None, copy=None, stream=None)"
    assert str(inspect.signature(hdal.Buffer.to_device)) == "(self, device, /)"


def test_module_names():
    """Every public name of the package is in the stubs, and nothing more; the
    extension's stub re-exports them; exceptions keep their bases."""
    public = {n for n, v in vars(hdal).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)}
    public.add("__version__")
    assert public == {n for n in PACKAGE if not n.startswith("_") or n == "__version__"}
    assert set(hdal.__all__) <= public
    assert ast.literal_eval(PACKAGE["__all__"].value) == hdal.__all__
    for n in vars(ext):
        if not n.startswith("__") or n == "__version__":
            assert n in EXTENSION, "hdal._hdal.%s is not in hdal/_hdal.pyi" % n
    for n in module_types():
        t = getattr(ext, n)
        if issubclass(t, BaseException):
            stub_bases = [ast.unparse(b) for b in PACKAGE[n].bases]
            assert [b.__name__ for b in t.__bases__] == [b.split(".")[-1] for b in stub_bases], n
    for n in dir(ext):
        if n.startswith("kDL"):
            assert ast.unparse(PACKAGE[n].annotation) == "int", n


def test_typed_usage_runs():
    """What typed_usage.py (checked by mypy --strict in the interop lab) promises, the runtime does."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        import typed_usage
    finally:
        sys.path.pop(0)
    typed_usage.main()
