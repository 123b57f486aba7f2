import { describe, expect, test } from "bun:test";
import QRCode from "qrcode";
import { formatUserCode, newUserCode, USER_CODE_ALPHABET } from "../src/ms-auth/device";
import { DeviceQrCodes, QR_OPTIONS, referenceModules } from "../src/ms-auth/device-qr";

/**
 * The device codes' QR symbols are made from differences taken once (src/ms-auth/device-qr.ts);
 * each must be exactly the symbol, and the SVG, that the `qrcode` library encodes for the same
 * text from scratch.
 */
describe("device code QR symbols", () => {
  for (const prefix of [
    "http://127.0.0.1:3000/client/ms-auth/device?code=",
    "https://login.example-network.net/client/ms-auth/device?code=",
    // Long enough that the symbol is a larger version.
    `https://${"a".repeat(60)}.example/client/ms-auth/device?code=`,
  ]) {
    test(`equal to the library's for random codes (${prefix.length + 9} characters)`, async () => {
      const codes = DeviceQrCodes.build(QRCode, prefix, "XXXX-XXXX", USER_CODE_ALPHABET);
      const samples = [
        "BBBB-BBBB",
        "ZZZZ-ZZZZ",
        "BCDF-GHJK",
        ...Array.from({ length: 60 }, () => formatUserCode(newUserCode())),
      ];
      for (const code of samples) {
        const text = prefix + code;
        expect(codes.modules(code)).toEqual(referenceModules(QRCode, text).data);
        const svg = await QRCode.toString([{ data: new TextEncoder().encode(text), mode: "byte" }], {
          type: "svg",
          ...QR_OPTIONS,
        });
        expect(codes.svg(code)).toBe(svg);
      }
    });
  }

  test("every character at every place flips the bits the library says", () => {
    const prefix = "http://127.0.0.1:3000/client/ms-auth/device?code=";
    const codes = DeviceQrCodes.build(QRCode, prefix, "XXXX-XXXX", USER_CODE_ALPHABET);
    for (let place = 0; place < 9; place++) {
      if (place === 4) continue;
      for (const ch of USER_CODE_ALPHABET) {
        const code = "BCDF-GHJK".split("");
        code[place] = ch;
        const text = prefix + code.join("");
        expect(codes.modules(code.join(""))).toEqual(referenceModules(QRCode, text).data);
      }
    }
  });

  test("a code of another shape or outside the alphabet is refused, not drawn", () => {
    const codes = DeviceQrCodes.build(QRCode, "http://x.test/d?code=", "XXXX-XXXX", USER_CODE_ALPHABET);
    expect(() => codes.svg("BCDFGHJK")).toThrow("another shape");
    expect(() => codes.svg("BCDF-GHJA")).toThrow("outside the alphabet");
  });
});
