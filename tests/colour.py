"""Colour science for the accessibility tests (issue 43): sRGB, CIELAB, CIEDE2000, simulated
colour-vision deficiency and WCAG contrast. Plain Python floats; no dependency.

- sRGB <-> linear and sRGB -> XYZ -> CIELAB: IEC 61966-2-1 (sRGB), D65 white, CIE 15:2004.
- CIEDE2000: CIE 142-2001, as written out step by step in Sharma, Wu & Dalal (2005),
  "The CIEDE2000 Color-Difference Formula: Implementation Notes, Supplementary Test Data, and
  Mathematical Observations", Color Res. Appl. 30(1), 21-30 (their equations 2-22).
- Colour-vision deficiency: Machado, Oliveira & Fernandes (2009), "A Physiologically-based Model
  for Simulation of Color Vision Deficiency", IEEE TVCG 15(6), the published matrices at severity
  1.0 (dichromacy), applied to linear sRGB (the matrices Chrome's and Firefox's DevTools use).
- Contrast: WCAG 2.1's relative luminance and contrast ratio (understanding SC 1.4.3).
"""
from __future__ import annotations

import math
import re

RGB = tuple[float, float, float]   # sRGB, each channel in [0, 1]
LAB = tuple[float, float, float]   # CIELAB L*, a*, b* (D65)

MACHADO_2009 = {
    "protanopia": ((0.152286, 1.052583, -0.204868),
                   (0.114503, 0.786281, 0.099216),
                   (-0.003882, -0.048116, 1.051998)),
    "deuteranopia": ((0.367322, 0.860646, -0.227968),
                     (0.280085, 0.672501, 0.047413),
                     (-0.011820, 0.042940, 0.968881)),
    "tritanopia": ((1.255528, -0.076749, -0.178779),
                   (-0.078411, 0.930809, 0.147602),
                   (0.004733, 0.691367, 0.303900)),
}
DEFICIENCIES = tuple(MACHADO_2009)

_NAMED = {"white": "#ffffff", "black": "#000000"}
_RGB_FN = re.compile(r"rgba?\(\s*([\d.]+)\s*,\s*([\d.]+)\s*,\s*([\d.]+)\s*(?:,\s*([\d.]+)\s*)?\)")


def parse(colour: str) -> tuple[RGB, float]:
    """A CSS/plotly colour as (sRGB in [0, 1], alpha).

    Example: parse("#f80") -> ((1.0, 0.533…, 0.0), 1.0); parse("rgba(0,0,0,0.55)") -> ((0, 0, 0), 0.55)
    """
    colour = _NAMED.get(colour.strip().lower(), colour.strip().lower())
    if colour.startswith("#"):
        digits = colour[1:]
        if len(digits) == 3:
            digits = "".join(d * 2 for d in digits)
        return tuple(int(digits[i:i + 2], 16) / 255 for i in (0, 2, 4)), 1.0
    match = _RGB_FN.fullmatch(colour)
    if not match:
        raise ValueError(f"not a colour: {colour!r}")
    r, g, b, a = match.groups()
    return (float(r) / 255, float(g) / 255, float(b) / 255), float(a) if a is not None else 1.0


def over(colour: str, ground: str = "#ffffff") -> RGB:
    """``colour`` as drawn on ``ground`` (alpha blended in sRGB, as browsers composite).

    Example: over("rgba(0,0,0,0.5)") -> (0.5, 0.5, 0.5)
    """
    (fg, alpha), (bg, _) = parse(colour), parse(ground)
    return tuple(alpha * f + (1 - alpha) * b for f, b in zip(fg, bg, strict=True))


def to_linear(c: float) -> float:
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def from_linear(c: float) -> float:
    c = min(max(c, 0.0), 1.0)
    return 12.92 * c if c <= 0.0031308 else 1.055 * c ** (1 / 2.4) - 0.055


def simulate(rgb: RGB, deficiency: str) -> RGB:
    """What a dichromat sees of ``rgb``: Machado's matrix on linear sRGB, clipped to the gamut.

    Example: simulate((1, 1, 1), "deuteranopia") -> (1.0, 1.0, 1.0) (each row sums to 1)
    """
    m = MACHADO_2009[deficiency]
    lin = [to_linear(c) for c in rgb]
    return tuple(from_linear(sum(m[i][j] * lin[j] for j in range(3))) for i in range(3))


_WHITE = (0.95047, 1.0, 1.08883)   # D65, Y = 1


def lab(rgb: RGB) -> LAB:
    """CIELAB (D65) of an sRGB colour.

    Example: lab((1, 0, 0)) -> (53.24, 80.09, 67.20)
    """
    r, g, b = (to_linear(c) for c in rgb)
    xyz = (0.4124564 * r + 0.3575761 * g + 0.1804375 * b,
           0.2126729 * r + 0.7151522 * g + 0.0721750 * b,
           0.0193339 * r + 0.1191920 * g + 0.9503041 * b)
    f = [t ** (1 / 3) if t > (6 / 29) ** 3 else t / (3 * (6 / 29) ** 2) + 4 / 29
         for t in (v / w for v, w in zip(xyz, _WHITE, strict=True))]
    return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])


def ciede2000(lab1: LAB, lab2: LAB, k_l: float = 1.0, k_c: float = 1.0, k_h: float = 1.0) -> float:
    """ΔE00 between two CIELAB colours (Sharma, Wu & Dalal 2005, equations 2-22).

    Example: ciede2000((50, 2.6772, -79.7751), (50, 0, -82.7485)) -> 2.0425 (their pair 1)
    """
    (l1, a1, b1), (l2, a2, b2) = lab1, lab2
    # 1. C'i, h'i: a* stretched by G, so that near-neutral colours' hues weigh less (eq. 2-7)
    c_bar = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(c_bar ** 7 / (c_bar ** 7 + 25 ** 7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = math.hypot(a1p, b1), math.hypot(a2p, b2)
    h1p = 0.0 if c1p == 0 else math.degrees(math.atan2(b1, a1p)) % 360
    h2p = 0.0 if c2p == 0 else math.degrees(math.atan2(b2, a2p)) % 360
    # 2. ΔL', ΔC', ΔH' (eq. 8-11): the hue difference the short way round, 0 for a neutral colour
    d_lp, d_cp = l2 - l1, c2p - c1p
    if c1p * c2p == 0:
        d_hp = 0.0
    elif abs(h2p - h1p) <= 180:
        d_hp = h2p - h1p
    elif h2p - h1p > 180:
        d_hp = h2p - h1p - 360
    else:
        d_hp = h2p - h1p + 360
    d_big_hp = 2 * math.sqrt(c1p * c2p) * math.sin(math.radians(d_hp / 2))
    # 3. the weights (eq. 12-22): mean hue the short way round, or the sum for a neutral colour
    l_bar, c_bar_p = (l1 + l2) / 2, (c1p + c2p) / 2
    if c1p * c2p == 0:
        h_bar = h1p + h2p
    elif abs(h1p - h2p) <= 180:
        h_bar = (h1p + h2p) / 2
    elif h1p + h2p < 360:
        h_bar = (h1p + h2p + 360) / 2
    else:
        h_bar = (h1p + h2p - 360) / 2
    t = (1 - 0.17 * math.cos(math.radians(h_bar - 30)) + 0.24 * math.cos(math.radians(2 * h_bar))
         + 0.32 * math.cos(math.radians(3 * h_bar + 6)) - 0.20 * math.cos(math.radians(4 * h_bar - 63)))
    d_theta = 30 * math.exp(-(((h_bar - 275) / 25) ** 2))
    r_c = 2 * math.sqrt(c_bar_p ** 7 / (c_bar_p ** 7 + 25 ** 7))
    s_l = 1 + 0.015 * (l_bar - 50) ** 2 / math.sqrt(20 + (l_bar - 50) ** 2)
    s_c = 1 + 0.045 * c_bar_p
    s_h = 1 + 0.015 * c_bar_p * t
    r_t = -math.sin(math.radians(2 * d_theta)) * r_c   # the blue region's rotation term
    dl, dc, dh = d_lp / (k_l * s_l), d_cp / (k_c * s_c), d_big_hp / (k_h * s_h)
    return math.sqrt(dl ** 2 + dc ** 2 + dh ** 2 + r_t * dc * dh)


def seen_difference(c1: str, c2: str, deficiency: str | None = None, ground: str = "#ffffff") -> float:
    """ΔE00 between two colours drawn on ``ground``, as a viewer with ``deficiency`` sees them.

    Example: seen_difference("#d62728", "#2ca02c") -> 71.8; with "deuteranopia" -> 4.6
    """
    a, b = over(c1, ground), over(c2, ground)
    if deficiency:
        a, b = simulate(a, deficiency), simulate(b, deficiency)
    return ciede2000(lab(a), lab(b))


def luminance(rgb: RGB) -> float:
    """WCAG 2.1 relative luminance (its 0.03928 threshold, sRGB's 0.04045: the same for 8-bit colours)."""
    r, g, b = (to_linear(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(fg: str, bg: str = "#ffffff") -> float:
    """WCAG 2.1 contrast ratio of ``fg`` (alpha blended onto ``bg``) against ``bg``.

    Example: contrast("#767676") -> 4.54; contrast("#000", "#fff") -> 21.0
    """
    hi, lo = sorted((luminance(over(fg, bg)), luminance(over(bg))), reverse=True)
    return (hi + 0.05) / (lo + 0.05)
