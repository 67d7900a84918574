"""A PDF file's bytes from its objects, for tests that build hostile documents by hand."""

from __future__ import annotations


def pdf_bytes(objects: list[bytes]) -> bytes:
    """A PDF 1.4 file of ``objects`` (numbered from 1; the first is the catalog), with its
    cross-reference table and trailer."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)
