"""A small, safe arithmetic language for template expressions.

Expressions are parsed with :func:`ast.parse` (parsing only) and then *walked* by our own interpreter: nothing
is ever compiled, ``eval``-ed or ``exec``-ed, and only the node types and functions listed here exist. The
language is Python's expression syntax restricted to numbers, variable names, arithmetic, comparisons,
``and``/``or``/``not``, ``x if c else y``, list literals with integer indexing, calls to an allow-list of math
functions, and one bounded summation form ``sum_range(i, start, stop, body)`` (in place of comprehensions).

Big computations are refused before they run: integer powers whose result would exceed ``10**1000``,
exponents above 10 000, ``factorial``/``comb`` arguments above 10 000, integers above 10 000 digits, ranges
above 10 000 terms and more than :data:`MAX_STEPS` evaluation steps.

Why one file longer than the project's ~600 lines: it is the language's safety boundary. The function table,
the static checker (:class:`_Checker`) and the interpreter (:class:`_Interpreter`) must admit exactly the same
node types, names and functions with the same size limits; they are kept side by side so that one reading checks
that they agree.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

Value = Any  # int | float | complex | Fraction | bool | list[Value]

MAX_EXPR_CHARS = 4000
MAX_NODES = 2000
MAX_EXPONENT = 10_000
MAX_POW_DIGITS = 1000  # refuse integer/fraction powers whose result would exceed 10**1000
MAX_INT_DIGITS = 10_000  # any intermediate integer larger than this is refused
MAX_INT_BITS = int(MAX_INT_DIGITS * math.log2(10)) + 1
MAX_FACTORIAL_ARG = 10_000
MAX_RANGE = 10_000
MAX_STEPS = 200_000

CONSTANTS: dict[str, Value] = {"pi": math.pi, "e": math.e, "tau": math.tau}


class ExprError(ValueError):
    """An expression that is not allowed or cannot be evaluated; the message says why."""


# ---------------------------------------------------------------------------------------------------- helpers
def _is_int(x: Value) -> bool:
    return isinstance(x, int)  # bool is an int, as in Python


def _is_number(x: Value) -> bool:
    return isinstance(x, int | float | complex | Fraction)


def _need_number(x: Value, what: str) -> None:
    if not _is_number(x):
        raise ExprError(f"{what} needs a number, got {type(x).__name__}")


def _need_int(x: Value, what: str) -> int:
    if isinstance(x, float) and x.is_integer():
        return int(x)  # comb(10, 3.0): an integral float is what the author meant
    if isinstance(x, Fraction) and x.denominator == 1:
        return int(x)
    if not _is_int(x):
        raise ExprError(f"{what} needs an integer, got {x!r}")
    return int(x)


def _digits(n: int) -> float:
    """Approximate number of decimal digits of |n| (cheap, no str())."""
    return n.bit_length() * 0.30103 if n else 0.0


def check_size(x: Value) -> Value:
    """Refuse integers (or fraction parts) beyond :data:`MAX_INT_DIGITS` digits."""
    if isinstance(x, int) and x.bit_length() > MAX_INT_BITS:
        raise ExprError(f"integer result too large (more than {MAX_INT_DIGITS} digits)")
    if isinstance(x, Fraction) and max(x.numerator.bit_length(), x.denominator.bit_length()) > MAX_INT_BITS:
        raise ExprError(f"fraction too large (more than {MAX_INT_DIGITS} digits)")
    return x


def _pow(base: Value, exp: Value) -> Value:
    _need_number(base, "**")
    _need_number(exp, "**")
    if isinstance(exp, complex):
        if abs(exp) > MAX_EXPONENT:
            raise ExprError(f"exponent too large (|exponent| > {MAX_EXPONENT})")
    elif abs(exp) > MAX_EXPONENT:
        raise ExprError(f"exponent {exp!r} too large (limit {MAX_EXPONENT})")
    # int ** -n is a cheap float; Fraction ** -n is exact, so its size counts either way.
    if _is_int(exp) and (exp > 0 or isinstance(base, Fraction)) and isinstance(base, int | Fraction):
        size = abs(base) if isinstance(base, int) else max(abs(base.numerator), base.denominator)
        if size > 1 and abs(exp) * _digits(size) > MAX_POW_DIGITS:
            raise ExprError(f"power too large: result would exceed 10**{MAX_POW_DIGITS}")
    if isinstance(exp, Fraction) and exp.denominator == 1:
        exp = int(exp)
    return base**exp


def _mul(a: Value, b: Value) -> Value:
    _need_number(a, "*")
    _need_number(b, "*")
    if isinstance(a, int) and isinstance(b, int) and a.bit_length() + b.bit_length() > MAX_INT_BITS + 1:
        raise ExprError(f"product too large (more than {MAX_INT_DIGITS} digits)")
    return a * b


def _arith(op: Callable[[Value, Value], Value], symbol: str) -> Callable[[Value, Value], Value]:
    def run(a: Value, b: Value) -> Value:
        _need_number(a, symbol)
        _need_number(b, symbol)
        return op(a, b)

    return run


_BINOPS: dict[type, Callable[[Value, Value], Value]] = {
    ast.Add: _arith(operator.add, "+"),
    ast.Sub: _arith(operator.sub, "-"),
    ast.Mult: _mul,
    ast.Div: _arith(operator.truediv, "/"),
    ast.FloorDiv: _arith(operator.floordiv, "//"),
    ast.Mod: _arith(operator.mod, "%"),
    ast.Pow: _pow,
}
_CMPOPS: dict[type, Callable[[Value, Value], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_OP_NAMES = {
    ast.MatMult: "@",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.Invert: "~",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}


# ---------------------------------------------------------------------------------------------------- functions
def _real(x: Value, name: str) -> float | int | Fraction:
    _need_number(x, name)
    if isinstance(x, complex):
        raise ExprError(f"{name}() needs a real number, got {x!r}")
    return x


def _comb(n: Value, k: Value) -> int:
    n_, k_ = _need_int(n, "comb"), _need_int(k, "comb")
    if abs(n_) > MAX_FACTORIAL_ARG or abs(k_) > MAX_FACTORIAL_ARG:
        raise ExprError(f"comb() arguments above {MAX_FACTORIAL_ARG} are refused")
    return math.comb(n_, k_)


def _perm(n: Value, k: Value) -> int:
    n_, k_ = _need_int(n, "perm"), _need_int(k, "perm")
    if abs(n_) > MAX_FACTORIAL_ARG or abs(k_) > MAX_FACTORIAL_ARG:
        raise ExprError(f"perm() arguments above {MAX_FACTORIAL_ARG} are refused")
    return math.perm(n_, k_)


def _factorial(n: Value) -> int:
    n_ = _need_int(n, "factorial")
    if n_ > MAX_FACTORIAL_ARG:
        raise ExprError(f"factorial() of more than {MAX_FACTORIAL_ARG} is refused")
    return math.factorial(n_)


def _gcd(*args: Value) -> int:
    return math.gcd(*(_need_int(a, "gcd") for a in args))


def _lcm(*args: Value) -> int:
    return math.lcm(*(_need_int(a, "lcm") for a in args))


def _sqrt(x: Value) -> float:
    return math.sqrt(_real(x, "sqrt"))


def _isqrt(x: Value) -> int:
    return math.isqrt(_need_int(x, "isqrt"))


def _log(x: Value, base: Value = None) -> float:
    if base is None:
        return math.log(_real(x, "log"))
    return math.log(_real(x, "log"), _real(base, "log"))


def _fraction(a: Value, b: Value = None) -> Fraction:
    for v in (a, b):
        if v is not None:
            if isinstance(v, complex) or not _is_number(v):
                raise ExprError(f"Fraction() needs rational arguments, got {v!r}")
            if isinstance(v, float) and not math.isfinite(v):
                raise ExprError(f"Fraction() of {v!r}")
    return Fraction(a) if b is None else Fraction(a, b)


def _int(x: Value) -> int:
    if isinstance(x, float) and not math.isfinite(x):
        raise ExprError(f"int() of {x!r}")
    return int(_real(x, "int"))


def _float(x: Value) -> float:
    return float(_real(x, "float"))


def _round(x: Value, ndigits: Value = None) -> Value:
    if ndigits is None:
        return round(_real(x, "round"))
    n = _need_int(ndigits, "round")
    if abs(n) > 400:
        raise ExprError("round() to more than 400 digits is refused")
    return round(_real(x, "round"), n)


def _minmax(fn: Callable[..., Value], name: str) -> Callable[..., Value]:
    def run(*args: Value) -> Value:
        items = args[0] if len(args) == 1 and isinstance(args[0], list) else list(args)
        if not items:
            raise ExprError(f"{name}() of nothing")
        for item in items:
            _real(item, name)
        return fn(items)

    return run


def _sum(values: Value) -> Value:
    if not isinstance(values, list):
        raise ExprError(
            "sum() takes a list, e.g. sum([a, b, c]); for a series use sum_range(i, start, stop, body)"
        )
    for item in values:
        _need_number(item, "sum")
    return sum(values)


def _abs(x: Value) -> Value:
    _need_number(x, "abs")
    return abs(x)


def _unary_real(fn: Callable[[Any], Value], name: str) -> Callable[[Value], Value]:
    def run(x: Value) -> Value:
        return fn(_real(x, name))

    return run


def _re(x: Value) -> Value:
    _need_number(x, "re")
    return x.real


def _im(x: Value) -> Value:
    _need_number(x, "im")
    return x.imag


def _numerator(x: Value) -> int:
    if isinstance(x, int | Fraction):
        return x.numerator
    raise ExprError(f"numerator() needs an integer or Fraction, got {x!r}")


def _denominator(x: Value) -> int:
    if isinstance(x, int | Fraction):
        return x.denominator
    raise ExprError(f"denominator() needs an integer or Fraction, got {x!r}")


@dataclass(frozen=True)
class _Fn:
    impl: Callable[..., Value]
    min_args: int
    max_args: int | None  # None: any number
    doc: str


FUNCTIONS: dict[str, _Fn] = {
    "sqrt": _Fn(_sqrt, 1, 1, "square root (float)"),
    "isqrt": _Fn(_isqrt, 1, 1, "integer square root"),
    "comb": _Fn(_comb, 2, 2, "binomial coefficient"),
    "perm": _Fn(_perm, 2, 2, "permutations n!/(n-k)!"),
    "factorial": _Fn(_factorial, 1, 1, "n!"),
    "gcd": _Fn(_gcd, 1, None, "greatest common divisor"),
    "lcm": _Fn(_lcm, 1, None, "least common multiple"),
    "abs": _Fn(_abs, 1, 1, "absolute value"),
    "min": _Fn(_minmax(min, "min"), 1, None, "smallest argument"),
    "max": _Fn(_minmax(max, "max"), 1, None, "largest argument"),
    "round": _Fn(_round, 1, 2, "Python round (half to even)"),
    "floor": _Fn(_unary_real(math.floor, "floor"), 1, 1, "round down to an integer"),
    "ceil": _Fn(_unary_real(math.ceil, "ceil"), 1, 1, "round up to an integer"),
    "Fraction": _Fn(_fraction, 1, 2, "exact fraction"),
    "int": _Fn(_int, 1, 1, "truncate to an integer"),
    "float": _Fn(_float, 1, 1, "convert to float"),
    "log": _Fn(_log, 1, 2, "natural log, or log(x, base)"),
    "log10": _Fn(_unary_real(math.log10, "log10"), 1, 1, "base-10 log"),
    "log2": _Fn(_unary_real(math.log2, "log2"), 1, 1, "base-2 log"),
    "exp": _Fn(_unary_real(math.exp, "exp"), 1, 1, "e**x"),
    "sin": _Fn(_unary_real(math.sin, "sin"), 1, 1, "sine (radians)"),
    "cos": _Fn(_unary_real(math.cos, "cos"), 1, 1, "cosine (radians)"),
    "tan": _Fn(_unary_real(math.tan, "tan"), 1, 1, "tangent (radians)"),
    "asin": _Fn(_unary_real(math.asin, "asin"), 1, 1, "arc sine"),
    "acos": _Fn(_unary_real(math.acos, "acos"), 1, 1, "arc cosine"),
    "atan": _Fn(_unary_real(math.atan, "atan"), 1, 1, "arc tangent"),
    "degrees": _Fn(_unary_real(math.degrees, "degrees"), 1, 1, "radians to degrees"),
    "radians": _Fn(_unary_real(math.radians, "radians"), 1, 1, "degrees to radians"),
    "re": _Fn(_re, 1, 1, "real part"),
    "im": _Fn(_im, 1, 1, "imaginary part"),
    "numerator": _Fn(_numerator, 1, 1, "numerator of a Fraction"),
    "denominator": _Fn(_denominator, 1, 1, "denominator of a Fraction"),
    "sum": _Fn(_sum, 1, 1, "sum of a list literal"),
}
SUM_RANGE = "sum_range"
RESERVED = frozenset(FUNCTIONS) | frozenset(CONSTANTS) | {SUM_RANGE, "True", "False"}

_ALLOWED_CONSTANT_TYPES = (bool, int, float, complex)


# ---------------------------------------------------------------------------------------------------- parse
@dataclass(frozen=True)
class Expr:
    """A checked expression: evaluate with :meth:`evaluate`; ``names`` are the variables it reads."""

    text: str
    tree: ast.Expression = field(repr=False, compare=False)
    names: frozenset[str]

    def evaluate(self, env: Mapping[str, Value], resolve: Callable[[str, Any], Value] | None = None) -> Value:
        """Evaluate with variable values from ``env``.

        ``resolve(name, raw)`` turns a stored non-numeric value (a text value such as ``"1/3"``) into a number
        when the expression reads it; without it, text values are parsed as constant expressions.
        """
        return _Interpreter(env, resolve).run(self.tree.body)


def parse_expr(text: str | int | float, names: frozenset[str] | set[str] | None = None) -> Expr:
    """Parse and check ``text``; ``names`` are the variables it may read (None: any non-reserved name).

    Raises :class:`ExprError` naming the first construct that is not allowed.
    """
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        raise ExprError(f"expected an expression (text or number), got {type(text).__name__}")
    source = str(text).strip()
    if not source:
        raise ExprError("empty expression")
    if len(source) > MAX_EXPR_CHARS:
        raise ExprError(f"expression longer than {MAX_EXPR_CHARS} characters")
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"not a valid expression ({exc.msg}): {source!r}") from None
    except (RecursionError, MemoryError, ValueError):
        raise ExprError("expression too deeply nested") from None
    used: set[str] = set()
    for count, _ in enumerate(ast.walk(tree), 1):
        if count > MAX_NODES:
            raise ExprError(f"expression too long (more than {MAX_NODES} syntax nodes)")
    _Checker(names, used).check(tree.body, frozenset())
    return Expr(source, tree, frozenset(used))


class _Checker:
    """Static allow-list check of a parsed expression (before anything runs)."""

    def __init__(self, names: frozenset[str] | set[str] | None, used: set[str]):
        self.names = names
        self.used = used

    def check(self, node: ast.AST, bound: frozenset[str]) -> None:
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            raise ExprError(_describe_forbidden(node))
        method(node, bound)

    def _Constant(self, node: ast.Constant, bound: frozenset[str]) -> None:
        if not isinstance(node.value, _ALLOWED_CONSTANT_TYPES):
            raise ExprError(f"{type(node.value).__name__} literals are not allowed (only numbers)")

    def _Name(self, node: ast.Name, bound: frozenset[str]) -> None:
        name = node.id
        if name.startswith("_"):
            raise ExprError(f"names starting with '_' (dunders) are not allowed: {name!r}")
        if name in bound or name in CONSTANTS or name in ("True", "False"):
            return
        if name in FUNCTIONS or name == SUM_RANGE:
            raise ExprError(f"function {name!r} used without calling it")
        if self.names is not None and name not in self.names:
            raise ExprError(f"undefined variable {name!r}")
        self.used.add(name)

    def _BinOp(self, node: ast.BinOp, bound: frozenset[str]) -> None:
        if type(node.op) not in _BINOPS:
            raise ExprError(
                f"operator {_OP_NAMES.get(type(node.op), type(node.op).__name__)!r} is not allowed"
            )
        self.check(node.left, bound)
        self.check(node.right, bound)

    def _UnaryOp(self, node: ast.UnaryOp, bound: frozenset[str]) -> None:
        if not isinstance(node.op, ast.USub | ast.UAdd | ast.Not):
            raise ExprError(
                f"operator {_OP_NAMES.get(type(node.op), type(node.op).__name__)!r} is not allowed"
            )
        self.check(node.operand, bound)

    def _BoolOp(self, node: ast.BoolOp, bound: frozenset[str]) -> None:
        for value in node.values:
            self.check(value, bound)

    def _Compare(self, node: ast.Compare, bound: frozenset[str]) -> None:
        for op in node.ops:
            if type(op) not in _CMPOPS:
                raise ExprError(f"comparison {_OP_NAMES.get(type(op), type(op).__name__)!r} is not allowed")
        self.check(node.left, bound)
        for comparator in node.comparators:
            self.check(comparator, bound)

    def _IfExp(self, node: ast.IfExp, bound: frozenset[str]) -> None:
        for part in (node.test, node.body, node.orelse):
            self.check(part, bound)

    def _List(self, node: ast.List, bound: frozenset[str]) -> None:
        for elt in node.elts:
            self.check(elt, bound)

    _Tuple = _List

    def _Subscript(self, node: ast.Subscript, bound: frozenset[str]) -> None:
        if isinstance(node.slice, ast.Slice | ast.Tuple):
            raise ExprError("slices are not allowed; index a list with one integer, e.g. [6, 2, 4, 8][n % 4]")
        self.check(node.value, bound)
        self.check(node.slice, bound)

    def _Call(self, node: ast.Call, bound: frozenset[str]) -> None:
        if not isinstance(node.func, ast.Name):
            if isinstance(node.func, ast.Attribute):
                raise ExprError(
                    f"attribute access ('.{node.func.attr}') is not allowed; call functions by bare name"
                )
            if isinstance(node.func, ast.Lambda):
                raise ExprError(_describe_forbidden(node.func))
            raise ExprError("only named functions can be called")
        name = node.func.id
        if name.startswith("_"):
            raise ExprError(f"names starting with '_' (dunders) are not allowed: {name!r}")
        if node.keywords:
            raise ExprError(f"{name}(): keyword arguments are not allowed")
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise ExprError(f"{name}(): *arguments are not allowed")
        if name == SUM_RANGE:
            self._sum_range(node, bound)
            return
        fn = FUNCTIONS.get(name)
        if fn is None:
            raise ExprError(
                f"function {name!r} is not allowed; allowed: {', '.join(sorted([*FUNCTIONS, SUM_RANGE]))}"
            )
        if len(node.args) < fn.min_args or (fn.max_args is not None and len(node.args) > fn.max_args):
            raise ExprError(f"{name}() takes {_arity(fn)} argument(s), got {len(node.args)}")
        for arg in node.args:
            self.check(arg, bound)

    def _sum_range(self, node: ast.Call, bound: frozenset[str]) -> None:
        if len(node.args) != 4 or not isinstance(node.args[0], ast.Name):
            raise ExprError(
                "sum_range takes (index_name, start, stop, body), e.g. sum_range(i, 1, n + 1, i**2)"
            )
        index = node.args[0].id
        if index.startswith("_") or index in RESERVED or (self.names is not None and index in self.names):
            raise ExprError(f"sum_range index {index!r} must be a fresh name (not a variable or function)")
        self.check(node.args[1], bound)
        self.check(node.args[2], bound)
        self.check(node.args[3], bound | {index})


def _arity(fn: _Fn) -> str:
    if fn.max_args is None:
        return f"at least {fn.min_args}"
    return str(fn.min_args) if fn.min_args == fn.max_args else f"{fn.min_args} to {fn.max_args}"


def _describe_forbidden(node: ast.AST) -> str:
    kind = type(node).__name__
    if isinstance(node, ast.Attribute):
        return f"attribute access ('.{node.attr}') is not allowed"
    if isinstance(node, ast.Lambda):
        return "lambda is not allowed"
    if isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
        return "comprehensions are not allowed; use sum_range(i, start, stop, body) for a bounded sum"
    if isinstance(node, ast.NamedExpr):
        return "assignment expressions (:=) are not allowed"
    if isinstance(node, ast.JoinedStr | ast.FormattedValue):
        return "f-strings are not allowed"
    if isinstance(node, ast.Dict | ast.Set):
        return f"{kind.lower()} literals are not allowed"
    if isinstance(node, ast.Starred):
        return "*unpacking is not allowed"
    if isinstance(node, ast.Await | ast.Yield | ast.YieldFrom):
        return f"{kind.lower()} is not allowed"
    return f"{kind} is not allowed in an expression"


# ---------------------------------------------------------------------------------------------------- evaluate
class _Interpreter:
    def __init__(self, env: Mapping[str, Value], resolve: Callable[[str, Any], Value] | None):
        self.env = env
        self.resolve = resolve
        self.scope: dict[str, Value] = {}
        self.steps = 0

    def run(self, node: ast.AST) -> Value:
        try:
            return self.eval(node)
        except ExprError:
            raise
        except ZeroDivisionError:
            raise ExprError("division by zero") from None
        except OverflowError as exc:
            raise ExprError(f"numeric overflow ({exc})") from None
        except RecursionError:
            raise ExprError("expression too deeply nested") from None
        except (ArithmeticError, ValueError, TypeError) as exc:
            raise ExprError(f"{type(exc).__name__}: {exc}") from None

    def eval(self, node: ast.AST) -> Value:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise ExprError(f"too much computation (more than {MAX_STEPS} steps)")
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.BinOp):
            left = self.eval(node.left)
            right = self.eval(node.right)
            return check_size(_BINOPS[type(node.op)](left, right))
        if isinstance(node, ast.UnaryOp):
            operand = self.eval(node.operand)
            if isinstance(node.op, ast.Not):
                return not operand
            _need_number(operand, "unary minus")
            return -operand if isinstance(node.op, ast.USub) else +operand
        if isinstance(node, ast.BoolOp):
            is_and = isinstance(node.op, ast.And)
            result: Value = None
            for value_node in node.values:
                result = self.eval(value_node)
                if bool(result) != is_and:  # short-circuit exactly like Python
                    return result
            return result
        if isinstance(node, ast.Compare):
            left = self.eval(node.left)
            for op, comparator in zip(node.ops, node.comparators, strict=True):
                right = self.eval(comparator)
                _need_number(left, "comparison")
                _need_number(right, "comparison")
                if not _CMPOPS[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            return self.eval(node.body) if self.eval(node.test) else self.eval(node.orelse)
        if isinstance(node, ast.List | ast.Tuple):
            return [self.eval(elt) for elt in node.elts]
        if isinstance(node, ast.Subscript):
            seq = self.eval(node.value)
            index = self.eval(node.slice)
            if not isinstance(seq, list):
                raise ExprError(f"only lists can be indexed, got {type(seq).__name__}")
            i = _need_int(index, "list index")
            if not -len(seq) <= i < len(seq):
                raise ExprError(f"list index {i} out of range for a list of {len(seq)}")
            return seq[i]
        if isinstance(node, ast.Call):
            return self._call(node)
        raise ExprError(_describe_forbidden(node))  # pragma: no cover - the checker already refused it

    def _name(self, name: str) -> Value:
        if name in self.scope:
            return self.scope[name]
        if name in self.env:
            raw = self.env[name]
            if _is_number(raw):
                return raw
            if self.resolve is not None:
                return self.resolve(name, raw)
            return constant_value(raw, name)
        if name in CONSTANTS:
            return CONSTANTS[name]
        if name in ("True", "False"):  # pragma: no cover - parsed as constants
            return name == "True"
        raise ExprError(f"undefined variable {name!r}")

    def _call(self, node: ast.Call) -> Value:
        assert isinstance(node.func, ast.Name)
        name = node.func.id
        if name == SUM_RANGE:
            return self._sum_range(node)
        args = [self.eval(a) for a in node.args]
        return check_size(FUNCTIONS[name].impl(*args))

    def _sum_range(self, node: ast.Call) -> Value:
        index_node, start_node, stop_node, body = node.args
        assert isinstance(index_node, ast.Name)
        start = _need_int(self.eval(start_node), "sum_range start")
        stop = _need_int(self.eval(stop_node), "sum_range stop")
        if stop - start > MAX_RANGE:
            raise ExprError(f"sum_range over more than {MAX_RANGE} terms is refused")
        saved = self.scope.get(index_node.id, _MISSING)
        terms = []
        try:
            for i in range(start, stop):
                self.scope[index_node.id] = i
                term = self.eval(body)
                _need_number(term, "sum_range")
                terms.append(term)
        finally:
            if saved is _MISSING:
                self.scope.pop(index_node.id, None)
            else:
                self.scope[index_node.id] = saved
        return check_size(sum(terms))  # builtin sum: same rounding as a Python sum over a list


_MISSING = object()


def constant_value(raw: Any, name: str = "value") -> Value:
    """The number a stored value stands for: numbers as they are, text such as ``"1/3"`` parsed as a
    constant expression (no variables)."""
    if isinstance(raw, bool):
        return raw
    if _is_number(raw):
        return raw
    if isinstance(raw, str):
        try:
            return parse_expr(raw, names=frozenset()).evaluate({})
        except ExprError as exc:
            raise ExprError(
                f"value {raw!r} of {name!r} is text, not a number an expression can use ({exc})"
            ) from None
    raise ExprError(f"value of {name!r} has unsupported type {type(raw).__name__}")


def evaluate(text: str, env: Mapping[str, Value] | None = None) -> Value:
    """Parse and evaluate in one step (for tests and one-off use)."""
    env = env or {}
    return parse_expr(text, names=frozenset(env)).evaluate(env)
