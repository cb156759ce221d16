// wordcount in JavaScript: counts the lines, words and bytes of the input, like `wc`, and
// returns {"lines":L,"words":W,"bytes":B}, byte for byte what the Rust example returns.
//
// Words are maximal runs of bytes that are not ASCII whitespace (space, \t, \n, \f, \r, as
// Rust's `is_ascii_whitespace`); lines are counted by their \n bytes. The same source
// builds with both JavaScript engines (see build.mjs).

// The host interface is named with its version: the bindings generators match imports
// against the versioned WIT name.
import * as host from "qhost:task/host@0.1.0";

function isAsciiWhitespace(byte) {
  return byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0c || byte === 0x0d;
}

// `input` is a Uint8Array; returning a value is `ok`, throwing a string is `err`.
export function run(input, info) {
  let lines = 0;
  let words = 0;
  let inWord = false;
  for (let i = 0; i < input.length; i++) {
    const byte = input[i];
    if (byte === 0x0a) lines++;
    if (isAsciiWhitespace(byte)) {
      inWord = false;
    } else if (!inWord) {
      inWord = true;
      words++;
    }
  }
  host.log("debug", `javascript wordcount: ${input.length} bytes`);
  const json = `{"lines":${lines},"words":${words},"bytes":${input.length}}`;
  // The JSON is ASCII, so each character is one byte.
  const output = new Uint8Array(json.length);
  for (let i = 0; i < json.length; i++) output[i] = json.charCodeAt(i);
  return output;
}
