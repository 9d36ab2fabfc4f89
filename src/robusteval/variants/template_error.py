"""The error of one template, shared by the native format (``template.py``) and the VAR-MATH CSV import
(``varmath_csv.py``, which ``template.load_template_file`` calls for a ``.csv``)."""

from __future__ import annotations

from robusteval.errors import UserError


class TemplateError(UserError):
    """A problem with one template; ``template_id`` and ``field`` say where."""

    def __init__(self, template_id: str | None, field: str | None, message: str, source: str | None = None):
        self.template_id = template_id
        self.field = field
        self.reason = message
        self.source = source
        where = f"{source}: " if source else ""
        who = f"template '{template_id}'" if template_id is not None else "template"
        what = f", field '{field}'" if field else ""
        super().__init__(f"{where}{who}{what}: {message}")
