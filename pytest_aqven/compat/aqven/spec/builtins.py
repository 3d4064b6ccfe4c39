"""`aqven.spec.builtins`: the ids of the built-in types, their groups, and the built-in value models the
types registry uses (media values, FieldSpec, the value of a Dynamic field, a map item's error)."""
from __future__ import annotations

from ....project.builtin_types import (Audio, Document, DynamicValue, FieldSpec, Image, MapItemError, MediaValue,
                                       Video)
from ....project.specs import DynamicLimits
from .names import Modality, TypeId

TEXT = TypeId("Text")
INT = TypeId("Int")
FLOAT = TypeId("Float")
BOOL = TypeId("Bool")
DATE = TypeId("Date")
DATE_TIME = TypeId("DateTime")
TIME_ZONE = TypeId("TimeZone")
LOCALE = TypeId("Locale")
TENANT_ID = TypeId("TenantId")
IMAGE = TypeId("Image")
AUDIO = TypeId("Audio")
VIDEO = TypeId("Video")
DOCUMENT = TypeId("Document")
DYNAMIC = TypeId("Dynamic")
FIELD_SPEC = TypeId("FieldSpec")
MAP_ITEM_ERROR = TypeId("MapItemError")
RECORD_LABEL = TypeId("Record")        # a FieldSpec's type when it has nested fields

SCALAR_TYPES = frozenset({TEXT, INT, FLOAT, BOOL, DATE, DATE_TIME})
CONTEXT_TYPES = frozenset({TIME_ZONE, LOCALE, TENANT_ID})
MEDIA_TYPES = frozenset({IMAGE, AUDIO, VIDEO, DOCUMENT})
DYNAMIC_TYPES = frozenset({DYNAMIC, FIELD_SPEC})
BUILTIN_TYPE_IDS = frozenset({*SCALAR_TYPES, *CONTEXT_TYPES, *MEDIA_TYPES, *DYNAMIC_TYPES, MAP_ITEM_ERROR})
# types whose values have a bounded size whatever the declaration says (text and lists need a bound)
ALWAYS_BOUNDED_TYPES = frozenset({INT, FLOAT, BOOL, DATE, DATE_TIME, *CONTEXT_TYPES, *MEDIA_TYPES, FIELD_SPEC,
                                  MAP_ITEM_ERROR})
MEDIA_MODALITY = {IMAGE: Modality.IMAGE, AUDIO: Modality.AUDIO, VIDEO: Modality.VIDEO, DOCUMENT: Modality.DOCUMENT}

__all__ = ["ALWAYS_BOUNDED_TYPES", "AUDIO", "BOOL", "BUILTIN_TYPE_IDS", "CONTEXT_TYPES", "DATE", "DATE_TIME",
           "DOCUMENT", "DYNAMIC", "DYNAMIC_TYPES", "FIELD_SPEC", "FLOAT", "IMAGE", "INT", "LOCALE", "MAP_ITEM_ERROR",
           "MEDIA_MODALITY", "MEDIA_TYPES", "RECORD_LABEL", "SCALAR_TYPES", "TENANT_ID", "TEXT", "TIME_ZONE",
           "VIDEO", "Audio", "Document", "DynamicLimits", "DynamicValue", "FieldSpec", "Image", "MapItemError",
           "MediaValue", "Video"]
