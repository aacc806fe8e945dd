"""JSON Schema from type hints, and the compiled argument validators of tools.

A tool is an ``async def`` whose parameters are annotated; :func:`build_signature` turns
those annotations into the tool's ``inputSchema`` (JSON Schema 2020-12) and, from the
return annotation, its ``outputSchema``. It also compiles one validator closure per tool,
because validation runs on every ``tools/call``: the closure only does ``isinstance``
checks and dict look-ups that were decided at registration time, never walks the schema.

The validator's verdicts are meant to be exactly those of a JSON Schema validator on the
generated schema (the tests check this differentially against ``jsonschema``), with one
deliberate difference in what is *passed on*: unknown argument keys are accepted (MCP
clients sometimes add some) but are not given to the function.

Supported annotations: ``str``, ``int``, ``float``, ``bool``, ``None``, unions and
``Optional``, ``Literal``, ``Enum`` subclasses, ``list``/``tuple``/``set``/``frozenset``
and their ``collections.abc`` counterparts, ``dict[str, X]``, ``Any``, ``NewType``,
``TypedDict``, attrs classes, dataclasses, pydantic v2 models (imported only when an
annotation is one), and ``Annotated[X, Field(...)]`` (ours or pydantic's, or
``annotated_types`` constraints; or ``Annotated[X, "a description"]``). Recursive
models are emitted under ``$defs``, and so are a pydantic model's nested models (as
pydantic writes them); other models are inlined.
"""

from mcpactor.server.schema.fields import MISSING, Field
from mcpactor.server.schema.names import validate_tool_name
from mcpactor.server.schema.output import serialize_output, to_jsonable
from mcpactor.server.schema.signature import ToolSignature, build_signature
from mcpactor.server.schema.types import ConversionError, TypeConverter, type_converter

__all__ = [
    "MISSING",
    "ConversionError",
    "Field",
    "ToolSignature",
    "TypeConverter",
    "build_signature",
    "serialize_output",
    "to_jsonable",
    "type_converter",
    "validate_tool_name",
]
