"""AQVEN's built-in value types that are records: media values, FieldSpec (a field declared at run
time), the value of a Dynamic field, and a map item's error. User code meets them as `aqven.spec`
names; the types registry uses them for fields typed Image, FieldSpec, Dynamic, ..."""
from __future__ import annotations

import re
from typing import Any, Final, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

NAME = r"^[a-z][a-z0-9_]{0,62}$"
TYPE_REF = r"^[A-Z][A-Za-z0-9]*(\[\])*\??$"
MEDIA_KEY: Final = "$media"


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class MediaValue(_Data):
    """A stored media value: {"$media": "<mime>", blob_id, size_bytes, name, url?}. In project files a
    media value names a file instead: {"$media": "<mime>", "file": "@root/samples/..."}."""
    media_type: str = Field(alias=MEDIA_KEY, pattern=r"^[a-z]+/[a-z0-9.+-]+$", max_length=255)
    blob_id: str | None = None
    size_bytes: int | None = Field(default=None, ge=0)
    name: str | None = Field(default=None, max_length=255)
    url: str | None = Field(default=None, max_length=2048)
    file: str | None = Field(default=None, min_length=1, max_length=1024)
    note: str | None = Field(default=None, max_length=1000)

    @model_validator(mode="after")
    def _stored_or_file(self) -> Self:
        if self.file is None and self.blob_id is None:
            raise ValueError("a media value names a file (in project files) or a stored blob_id")
        prefix = MEDIA_PREFIX.get(type(self).__name__)
        if prefix and not re.match(prefix, self.media_type):
            raise ValueError(f"{self.media_type} is not a {type(self).__name__.lower()} media type")
        return self


class Image(MediaValue):
    pass


class Audio(MediaValue):
    pass


class Video(MediaValue):
    pass


class Document(MediaValue):
    pass


MEDIA_PREFIX = {"Image": r"^image/", "Audio": r"^audio/", "Video": r"^video/", "Document": r"^(application|text)/"}
MEDIA_TYPES = {"Image": Image, "Audio": Audio, "Video": Video, "Document": Document}


class FieldSpec(_Data):
    """A field declared at run time (the form of a Dynamic output). `Record` with nested fields."""
    name: str = Field(pattern=NAME)
    type: str = Field(pattern=TYPE_REF)
    description: str = Field(min_length=1, max_length=300)
    max_length: int | None = Field(default=None, alias="maxLength", ge=1)
    max_items: int | None = Field(default=None, alias="maxItems", ge=1)
    minimum: float | None = None
    maximum: float | None = None
    pattern: str | None = Field(default=None, max_length=500)
    enum: list[str] | None = Field(default=None, min_length=1, max_length=50)
    fields: list[FieldSpec] | None = None

    @model_validator(mode="after")
    def _shape(self) -> Self:
        base = self.type.rstrip("?").replace("[]", "")
        if base in MEDIA_TYPES or base in ("Dynamic", "DynamicValue", "FieldSpec"):
            raise ValueError(f"type {base} is not allowed in a FieldSpec: media, Dynamic and FieldSpec are not")
        if (base == "Record") != (self.fields is not None):
            raise ValueError("fields is set if and only if type is Record")
        return self


class DynamicValue(_Data):
    """The value of a Dynamic field with the fields that shaped it."""
    value: Any
    fields: tuple[FieldSpec, ...]
    schema_hash: str


class MapItemError(_Data):
    index: int = Field(ge=0)
    code: str = Field(max_length=64)
    message: str = Field(max_length=400)


FieldSpec.model_rebuild()
