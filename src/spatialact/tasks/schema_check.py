"""The JSON-Schema compiler's former home: it is :mod:`spatialact.schema_compiler` now (a general utility the task
and question files both use); its names stay importable from here."""

from ..schema_compiler import CompiledSchema, Problems, SchemaCompileError, compile_schema, format_path

__all__ = ["compile_schema", "CompiledSchema", "Problems", "SchemaCompileError", "format_path"]
