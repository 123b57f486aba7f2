import type * as QRCode from "qrcode";

/** The QR options of every device code's symbol: error correction M, two modules of margin, mask 2. */
export const QR_OPTIONS = { errorCorrectionLevel: "M", margin: 2, maskPattern: 2 } as const;

/** The symbol of `text` as one byte-mode segment, from the library: the reference for everything below. */
export function referenceModules(qr: typeof QRCode, text: string) {
  const { modules } = qr.create([{ data: new TextEncoder().encode(text), mode: "byte" }], QR_OPTIONS);
  return { size: modules.size, data: modules.data as Uint8Array };
}

/**
 * QR codes of the device page's address, one per user code, without encoding each anew.
 *
 * The addresses differ only in the code's characters. In byte mode, with the version, the error
 * correction level and the mask fixed, a symbol's modules are linear over GF(2) in its data
 * bytes: the Reed-Solomon parity is a linear map of the data, the mask is XORed onto every
 * symbol alike, and the function patterns and format bits are the same for all. So the symbol
 * of a code is the symbol of a base code XOR, for each character, the difference that character
 * makes at its place. Those differences (8 places x 19 characters) are taken from the `qrcode`
 * library itself, once (153 encodings, about 20 ms); each code then costs 8 XORs of a bitset and
 * the SVG path, a tenth of the library's time measured side by side (the app spent 144 us of
 * CPU per code in the library).
 * test/device-qr.test.ts holds every symbol and its SVG equal to the library's own.
 */
export class DeviceQrCodes {
  private constructor(
    private readonly size: number,
    private readonly shapeLength: number,
    /** Where the code's characters are in it (the others, as the hyphen, are the same in every code). */
    private readonly places: number[],
    private readonly alphabet: string,
    private readonly base: Uint32Array,
    /** [place][character index]: the bits that character flips at that place. */
    private readonly deltas: Uint32Array[][],
  ) {}

  /**
   * `prefix` + a code shaped like `shape` (its letters replaced by the alphabet's characters,
   * anything else kept, as the hyphen of `XXXX-XXXX`) is the text of each symbol.
   */
  static build(qr: typeof QRCode, prefix: string, shape: string, alphabet: string): DeviceQrCodes {
    const places = [...shape].flatMap((ch, i) => (ch === "X" ? [i] : []));
    const baseText = prefix + shape.replaceAll("X", alphabet[0]!);
    const base = referenceModules(qr, baseText);
    const baseBits = pack(base.data);
    const deltas = places.map((place) =>
      [...alphabet].map((ch, c) => {
        if (c === 0) return new Uint32Array(baseBits.length);
        const at = prefix.length + place;
        const other = referenceModules(qr, baseText.slice(0, at) + ch + baseText.slice(at + 1));
        if (other.size !== base.size) throw new Error("device QR codes: the symbol's version changed with a code");
        const bits = pack(other.data);
        for (let w = 0; w < bits.length; w++) bits[w]! ^= baseBits[w]!;
        return bits;
      }),
    );
    return new DeviceQrCodes(base.size, shape.length, places, alphabet, baseBits, deltas);
  }

  /** The symbol's modules (1 dark) for `prefix + code`, `code` shaped like the shape given. */
  modules(code: string): Uint8Array {
    const bits = this.bits(code);
    const out = new Uint8Array(this.size * this.size);
    for (let i = 0; i < out.length; i++) out[i] = (bits[i >>> 5]! >>> (i & 31)) & 1;
    return out;
  }

  /** The SVG document of the symbol, byte for byte what `qrcode`'s `toString` gives for the same text. */
  svg(code: string): string {
    const data = this.modules(code);
    const size = this.size;
    const margin = QR_OPTIONS.margin;
    // qrcode's lib/renderer/svg-tag.js: a run of dark modules per `h`.
    let path = "";
    let moveBy = 0;
    let newRow = false;
    let lineLength = 0;
    for (let i = 0; i < data.length; i++) {
      const col = i % size;
      if (!col && !newRow) newRow = true;
      if (data[i]) {
        lineLength++;
        if (!(i > 0 && col > 0 && data[i - 1])) {
          path += newRow ? `M${col + margin} ${0.5 + (i - col) / size + margin}` : `m${moveBy} 0`;
          moveBy = 0;
          newRow = false;
        }
        if (!(col + 1 < size && data[i + 1])) {
          path += `h${lineLength}`;
          lineLength = 0;
        }
      } else {
        moveBy++;
      }
    }
    const whole = size + margin * 2;
    return (
      `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${whole} ${whole}" shape-rendering="crispEdges">` +
      `<path fill="#ffffff" d="M0 0h${whole}v${whole}H0z"/><path stroke="#000000" d="${path}"/></svg>\n`
    );
  }

  private bits(code: string): Uint32Array {
    if (code.length !== this.shapeLength) throw new Error("device QR codes: a code of another shape");
    const bits = this.base.slice();
    for (let p = 0; p < this.places.length; p++) {
      const c = this.alphabet.indexOf(code[this.places[p]!]!);
      if (c < 0) throw new Error("device QR codes: a code character outside the alphabet");
      const d = this.deltas[p]![c]!;
      for (let w = 0; w < bits.length; w++) bits[w]! ^= d[w]!;
    }
    return bits;
  }
}

function pack(modules: Uint8Array): Uint32Array {
  const bits = new Uint32Array(Math.ceil(modules.length / 32));
  for (let i = 0; i < modules.length; i++) if (modules[i]) bits[i >>> 5]! |= 1 << (i & 31);
  return bits;
}
