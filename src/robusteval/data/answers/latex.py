"""LaTeX -> plain infix text for symbolic comparison ("\\frac{a}{b}" -> "((a)/(b))", "\\sin^2 x" ->
"((sin(x))**(2))"): pure string work, run in the parent process. Unsupported LaTeX raises ``_Unsupported``.
"""

from __future__ import annotations

import re

from robusteval.data.answers.markup import _find_braced

_FUNCS = {
    "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tan": "tan", "cot": "cot", "sec": "sec", "csc": "csc",
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "asin": "asin", "acos": "acos", "atan": "atan",
    "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "exp": "exp", "log": "log", "ln": "log", "Abs": "Abs",
    "abs": "Abs", "floor": "floor", "ceil": "ceiling", "binomial": "binomial", "root": "root",
}  # fmt: skip
_CONSTS = {"pi": "pi", "oo": "oo", "infty": "oo", "e": "E", "i": "I"}
_GREEK = frozenset(
    ("alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta", "vartheta", "iota",
     "kappa", "lambda", "mu", "nu", "xi", "omicron", "rho", "sigma", "tau", "upsilon", "phi", "varphi", "chi",
     "psi", "omega", "Gamma", "Delta", "Theta", "Lambda", "Xi", "Sigma", "Phi", "Psi", "Omega")
)  # fmt: skip
_SKIP_CMDS = frozenset(
    {"left", "right", "displaystyle", "textstyle", "limits", "big", "Big", "bigl", "bigr", "Bigl", "Bigr",
     "quad", "qquad", "circ", "%", "!", ",", ";", ":", " "}
)  # fmt: skip
_CMD_OPS = {
    "cdot": "*",
    "times": "*",
    "ast": "*",
    "div": "/",
    "{": "(",
    "}": ")",
    "lbrace": "(",
    "rbrace": ")",
}

Token = tuple[str, str]  # (kind, text): kind in num, id, fn, op


class _Unsupported(Exception):
    """LaTeX we do not convert; the caller falls back to string comparison."""


def _latex_to_plain(s: str) -> str:
    """Rewrite LaTeX as a plain infix string ("\\frac{a}{b}" -> "((a)/(b))"); raises _Unsupported."""
    out: list[str] = []
    i, n = 0, len(s)

    def arg(pos: int) -> tuple[str, int]:
        while pos < n and s[pos].isspace():
            pos += 1
        if pos >= n:
            raise _Unsupported("missing argument")
        if s[pos] == "{":
            end = _find_braced(s, pos)
            if end is None:
                raise _Unsupported("unbalanced braces")
            return s[pos + 1 : end - 1], end
        if s[pos] == "\\":
            m = re.match(r"\\(?:[A-Za-z]+|.)", s[pos:])
            assert m is not None
            return m.group(0), pos + m.end()
        return s[pos], pos + 1

    def operand(pos: int) -> tuple[str, int]:
        """A function's operand after "\\sin^2": "(...)" (possibly with \\left/\\right) or one argument."""
        m = re.match(r"\s*(?:\\left\s*)?\(", s[pos:])
        if m is None:
            return arg(pos)
        depth, j = 0, pos + m.end() - 1
        for k in range(j, n):
            depth += {"(": 1, ")": -1}.get(s[k], 0)
            if depth == 0:
                return s[j + 1 : k].removesuffix("\\right"), k + 1
        raise _Unsupported("unbalanced parentheses")

    abs_open = False
    while i < n:
        c = s[i]
        if c == "\\":
            m = re.match(r"\\([A-Za-z]+|.)", s[i:])
            if m is None:
                raise _Unsupported("trailing backslash")
            name, i = m.group(1), i + m.end()
            if name in ("frac", "dfrac", "tfrac", "cfrac"):
                a, i = arg(i)
                b, i = arg(i)
                out.append(f" (({_latex_to_plain(a)})/({_latex_to_plain(b)})) ")
            elif name == "binom":
                a, i = arg(i)
                b, i = arg(i)
                out.append(f" binomial(({_latex_to_plain(a)}),({_latex_to_plain(b)})) ")
            elif name == "sqrt":
                idx = re.match(r"\s*\[([^\]]*)\]", s[i:])
                root = None
                if idx:
                    root, i = idx.group(1), i + idx.end()
                a, i = arg(i)
                body = _latex_to_plain(a)
                out.append(f" root(({body}),({_latex_to_plain(root)})) " if root else f" sqrt({body}) ")
            elif name == "log" and s[i : i + 1] == "_":
                base, i = arg(i + 1)
                a, i = arg(i)
                out.append(f" log(({_latex_to_plain(a)}),({_latex_to_plain(base)})) ")
            elif name in _SKIP_CMDS:
                continue
            elif name in _CMD_OPS:
                out.append(f" {_CMD_OPS[name]} ")
            elif name in ("lvert", "rvert", "vert", "|"):
                out.append(" Abs( " if not abs_open else " ) ")
                abs_open = not abs_open
            elif name in ("lfloor", "rfloor", "lceil", "rceil"):
                out.append({"lfloor": " floor( ", "lceil": " ceil( "}.get(name, " ) "))
            elif name in _FUNCS and re.match(r"\s*\^", s[i:]):
                # "\sin^2 x" is (sin x)^2, not sin applied to "^2 x"
                power, i = arg(s.index("^", i) + 1)
                body, i = operand(i)
                out.append(f" (({name}({_latex_to_plain(body)}))**({_latex_to_plain(power)})) ")
            elif name in _FUNCS or name in _CONSTS or name in _GREEK:
                out.append(f" {name} ")
            else:
                raise _Unsupported(f"\\{name}")
        elif c == "^":
            a, i = arg(i + 1)
            out.append(f" ** ({_latex_to_plain(a)}) ")
        elif c == "|":
            out.append(" Abs( " if not abs_open else " ) ")
            abs_open = not abs_open
            i += 1
        else:
            out.append(
                {"{": " ( ", "}": " ) ", "[": " ( ", "]": " ) ", "·": "*", "×": "*", "÷": "/"}.get(c, c)
            )
            i += 1
    if abs_open:
        raise _Unsupported("unclosed |")
    return "".join(out)
