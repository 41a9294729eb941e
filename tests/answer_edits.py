"""A known answer edited the ways a learner hides a copy, in its own text (its layout kept).

Each edit: a constant changed, a statement added, two statements swapped, an operation's
operands swapped; and every name the code binds or reads renamed.
"""

import builtins
import io
import keyword
import re
import tokenize


def renamed(text: str) -> str:
    """Every name the code binds or reads renamed (not attributes, builtins or keywords)."""
    out, previous = [], None
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if (
            token.type == tokenize.NAME
            and not keyword.iskeyword(token.string)
            and not hasattr(builtins, token.string)
            and not (previous is not None and previous.string == ".")
        ):
            token = token._replace(string=f"my_{token.string.strip('_')}")
        out.append(token)
        if token.type not in (tokenize.NL, tokenize.COMMENT):
            previous = token
    return tokenize.untokenize(out)


def constant_changed(text: str) -> str:
    numbers = list(re.finditer(r"(?<![\w.])\d+(?![\w.])", text))
    if not numbers:
        return text.replace("return ", "return 1 + ", 1)
    last = numbers[-1]
    return text[: last.start()] + str(int(last.group()) + 1) + text[last.end() :]


def _body_lines(text: str) -> tuple[list[str], int, str]:
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("def "))
    while not lines[start].rstrip().endswith(":"):
        start += 1
    body = start + 1
    indent = re.match(r"\s*", lines[body]).group()
    return lines, body, indent


def statement_added(text: str) -> str:
    lines, body, indent = _body_lines(text)
    line = "tl.debug_barrier()" if "@triton" in text or "tl." in text else "assert True"
    lines.insert(body, f"{indent}{line}\n")
    return "".join(lines)


def statements_swapped(text: str) -> str:
    lines, body, indent = _body_lines(text)
    simple = re.compile(rf"{indent}\w+ = [^\n]*[^([,\n]\n$")  # one whole line each
    for i in range(body, len(lines) - 1):
        if simple.match(lines[i]) and simple.match(lines[i + 1]):
            lines[i], lines[i + 1] = lines[i + 1], lines[i]
            break
    return "".join(lines)


def commuted(text: str) -> str:
    return re.sub(r"\b(\w+) ([+*]) (\w+)\b", r"\3 \2 \1", text, count=1)


ONE_EDIT = {
    "a constant changed": constant_changed,
    "a statement added": statement_added,
    "two statements swapped": statements_swapped,
    "an operation commuted": commuted,
}
