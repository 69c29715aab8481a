# SPDX-License-Identifier: Apache-2.0
"""Torch tensors <-> the checkpoint's datasets: dtypes, host snapshots, views over loaded bytes.

Every torch dtype with a fixed-size element is stored with its own bytes: float64/32/16 and
bfloat16, int64..int8 and uint8 as themselves; bool as uint8 (0/1; the skeleton says bool);
complex64/complex128 as float32/float64 with a last extent of 2 (real, imaginary), as
torch.view_as_real gives them. Sparse, quantized and meta tensors are refused: they have no
plain bytes to store.
"""
from __future__ import annotations

import ctypes

import torch

from ._tree import TreeError

# torch dtype -> (stored dtype name, the torch dtype of the stored elements)
_STORED = {
    torch.float64: ("float64", torch.float64), torch.float32: ("float32", torch.float32),
    torch.float16: ("float16", torch.float16), torch.bfloat16: ("bfloat16", torch.bfloat16),
    torch.int64: ("int64", torch.int64), torch.int32: ("int32", torch.int32),
    torch.int16: ("int16", torch.int16), torch.int8: ("int8", torch.int8),
    torch.uint8: ("uint8", torch.uint8), torch.bool: ("uint8", torch.uint8),
    torch.complex64: ("float32", torch.float32), torch.complex128: ("float64", torch.float64),
}
_BY_NAME = {str(dtype).removeprefix("torch."): dtype for dtype in _STORED}
_FROM_STORED = {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16,
                "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32,
                "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8}


def check_savable(tensor: torch.Tensor, here: str) -> None:
    """Raises TreeError for a tensor that has no plain bytes to store."""
    if tensor.layout != torch.strided:
        raise TreeError(f"dlx.torch: {here} is a sparse tensor ({tensor.layout}); save "
                        f"tensor.to_dense(), or its indices and values as two tensors")
    if tensor.is_quantized:
        raise TreeError(f"dlx.torch: {here} is a quantized tensor ({tensor.dtype}); save "
                        f"tensor.dequantize(), or tensor.int_repr() with its scale and zero point")
    if tensor.device.type == "meta":
        raise TreeError(f"dlx.torch: {here} lives on the meta device (it has no data); "
                        f"materialise the module (e.g. module.to_empty(device=...) and "
                        f"initialise it) before saving")
    if tensor.dtype not in _STORED:
        raise TreeError(f"dlx.torch: {here} has dtype {tensor.dtype}, which a checkpoint cannot "
                        f"hold (supported: {', '.join(sorted(_BY_NAME))})")


def stored_form(tensor: torch.Tensor) -> tuple[str, torch.Tensor]:
    """(stored dtype name, a tensor of the stored elements sharing `tensor`'s memory where it
    can: only a non-contiguous tensor is copied)."""
    name, _ = _STORED[tensor.dtype]
    plain = tensor.detach()
    if plain.is_complex():
        plain = torch.view_as_real(plain.resolve_conj())
    elif plain.dtype == torch.bool:
        plain = plain.view(torch.uint8)
    if plain.is_neg():
        plain = plain.resolve_neg()
    return name, plain.contiguous()


def _dtypes(stored: str, dtype_name: str, here: str) -> tuple[torch.dtype, torch.dtype]:
    """(the torch dtype of the stored elements, the tensor's own dtype)."""
    element = _FROM_STORED.get(stored)
    dtype = _BY_NAME.get(dtype_name)
    if element is None or dtype is None or _STORED[dtype][0] != stored:
        raise TreeError(f"dlx.torch: the checkpoint stores {here} as {stored}, which does not "
                        f"hold a {dtype_name} tensor; was the file edited?")
    return element, dtype


def from_stored(address: int, nbytes: int, stored: str, shape: tuple, dtype_name: str,
                here: str) -> torch.Tensor:
    """A CPU tensor of dtype `dtype_name` over the loaded bytes at `address` (no copy; valid
    while the loaded checkpoint is open)."""
    element, dtype = _dtypes(stored, dtype_name, here)
    if nbytes == 0:
        flat = torch.empty(shape, dtype=element)
    else:
        memory = (ctypes.c_char * nbytes).from_address(address)
        flat = torch.frombuffer(memory, dtype=element).reshape(shape)
    return _as_dtype(flat, dtype, shape)


def element_dtype(stored: str) -> torch.dtype | None:
    """The torch dtype of the stored elements named `stored`; None for a name dlx.torch never
    writes."""
    return _FROM_STORED.get(stored)


def as_saved_dtype(flat: torch.Tensor, stored: str, shape: tuple, dtype_name: str,
                   here: str) -> torch.Tensor:
    """`flat` (a tensor of the stored elements, of the stored shape) as the saved tensor of dtype
    `dtype_name`, sharing its memory (complex and bool are views)."""
    _, dtype = _dtypes(stored, dtype_name, here)
    return _as_dtype(flat, dtype, shape)


def placeholder(stored: str, shape: tuple, dtype_name: str, here: str) -> torch.Tensor:
    """A tensor without memory (on the meta device) of the shape and dtype from_stored would
    give: it stands for a deferred tensor (still in the file) while the state is checked."""
    _, dtype = _dtypes(stored, dtype_name, here)
    return torch.empty(shape[:-1] if dtype.is_complex else shape, dtype=dtype, device="meta")


def fits_stored(tensor: torch.Tensor, stand_in: torch.Tensor, nbytes: int) -> bool:
    """Whether `tensor`'s own memory can take the stored bytes `stand_in` (a placeholder)
    stands for as they are: a contiguous CPU tensor of the same dtype, shape and byte size."""
    return (tensor.device.type == "cpu" and tensor.layout == torch.strided and
            tensor.dtype == stand_in.dtype and tensor.shape == stand_in.shape and
            tensor.is_contiguous() and not tensor.is_neg() and not tensor.is_conj() and
            tensor.numel() * tensor.element_size() == nbytes)


def fresh_for(stored: str, shape: tuple, dtype_name: str, here: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(a new CPU tensor of the dtype `dtype_name` for a deferred tensor, the tensor of stored
    elements over the same memory, to read the bytes into)."""
    element, dtype = _dtypes(stored, dtype_name, here)
    flat = torch.empty(shape, dtype=element)
    return _as_dtype(flat, dtype, shape), flat


def _as_dtype(flat: torch.Tensor, dtype: torch.dtype, shape: tuple) -> torch.Tensor:
    if dtype.is_complex:
        return torch.view_as_complex(flat) if flat.numel() else torch.empty(shape[:-1], dtype=dtype)
    if dtype == torch.bool:
        return flat.view(torch.bool)
    return flat
