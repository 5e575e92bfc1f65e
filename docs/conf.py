"""Sphinx configuration of retrograd's documentation: the tutorials (Markdown, via MyST) and the API reference
generated from the docstrings (autodoc + napoleon). Built with warnings as errors by tests/test_docs.py."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

project = "retrograd"
author = "retrograd contributors"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "myst_parser"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": False}
autodoc_typehints = "none"  # signatures mirror torch's; the annotations name internal types
autodoc_member_order = "bysource"
suppress_warnings = ["myst.header"]
html_theme = "alabaster"


def _op_table_directive():
    """`.. retrograd-op-table::` — every row of the rule table as a definition list, from the table itself."""
    from docutils import nodes
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective

    class OpTable(SphinxDirective):
        def run(self):
            import retrograd  # noqa: F401 - importing defines every row
            from retrograd.ops.registry import OPS

            lines = []
            for name in sorted(OPS):
                op = OPS[name]
                lines += [f"``{name}``", f"   node ``{op.node_class.__name__}``; inputs ``{', '.join(op.inputs)}``"
                          + (f"; params ``{', '.join(op.params)}``" if op.params else ""), ""]
                for inp, src in op.vjp_src.items():
                    lines += [f"   - VJP ``{inp}``: ``{src}``"]
                if op.jvp_src:
                    lines += [f"   - JVP: ``{op.jvp_src}``"]
                lines.append("")
            container = nodes.container()
            self.state.nested_parse(StringList(lines, source="rule table"), self.content_offset, container)
            return [container]

    return OpTable


def setup(app):
    app.add_directive("retrograd-op-table", _op_table_directive())
