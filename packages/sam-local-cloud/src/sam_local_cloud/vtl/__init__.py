"""API Gateway mapping templates: the part of Velocity (VTL) and of API Gateway's variables that
integration request and response templates are written in.

Supported: references (``$name``, ``${name}``, quiet ``$!name``) with properties (``$a.b``), indexes
(``$a[0]``) and method calls (``$input.json('$.x')``); ``#set``, ``#if``/``#elseif``/``#else``/``#end``
with ``==``, ``!=``, ``<``, ``>``, ``<=``, ``>=``, ``&&``, ``||``, ``!`` (and ``and``, ``or``, ``not``);
``#foreach`` with ``$foreach.hasNext``; ``##`` comments. API Gateway's ``$input`` (``body``, ``json``,
``path``, ``params``), ``$util`` (``escapeJavaScript``, ``parseJson``, ``base64Encode``/``Decode``,
``urlEncode``/``Decode``) and ``$context``/``$stageVariables`` as given. As in Velocity, a reference
that has no value is written out as it stands in the template (``$!`` writes nothing), and a map or
list is written as Java writes it (``{a=1, b=[x, y]}``).

Not supported (the template is refused with TemplateSyntaxError, which the gateway answers as AWS
answers a mapping failure, HTTP 500): macros, ``#break``/``#stop``/``#include``/``#parse``, ranges, and
arithmetic.

``parser`` reads a template into nodes, ``renderer`` writes them out, ``values`` is how Velocity treats a
value, ``gateway`` holds API Gateway's ``$input`` and ``$util``.
"""

from sam_local_cloud.vtl.gateway import InputVariable, UtilVariable, select
from sam_local_cloud.vtl.renderer import render
from sam_local_cloud.vtl.values import UNDEFINED, TemplateSyntaxError, to_text

__all__ = ["UNDEFINED", "InputVariable", "TemplateSyntaxError", "UtilVariable", "render", "select", "to_text"]
