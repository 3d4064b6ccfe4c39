"""`aqven.runtime.values`: a recorded value, inline or stored as a blob."""
from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import Field

from .address import ResourceModel


class InlineValue(ResourceModel):
    kind: Literal["inline"] = "inline"
    value: Any


class BlobValue(ResourceModel):
    kind: Literal["blob"] = "blob"
    blob_id: str
    sha256: str
    size_bytes: Annotated[int, Field(ge=0)]
    media_type: str
    preview: Annotated[str, Field(max_length=8192)]
    truncated: bool


ValueRef = Annotated[Union[InlineValue, BlobValue], Field(discriminator="kind")]


class BlobUploaded(ResourceModel):
    blob_id: str
    sha256: str
    size_bytes: Annotated[int, Field(ge=0)]
    media_type: str


__all__ = ["BlobUploaded", "BlobValue", "InlineValue", "ValueRef"]
