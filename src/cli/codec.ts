/**
 * The CLI's `encode` and `decode` commands: public forms of IDs (`@kvid/core/codec`) for scripts,
 * values as arguments or one a line on standard input, the key from `KVID_ID_KEY`. No server.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { KvIdError } from "../contract/errors.ts";
import {
  base36,
  base62,
  type Codec,
  decimal,
  encrypted,
  parseKeys,
  prefix,
  type RadixCodec,
  suffix,
} from "../codec/mod.ts";
import { CliError, EXIT, usage } from "./exit.ts";

/** The environment variable holding the key(s), in hex: `<hex>` or `2:<hex>,1:<hex>`. */
export const KEY_ENV = "KVID_ID_KEY";

/** The help of `encode` and `decode`. */
export const CODEC_HELP: string = `kvid encode [options] [ID ...]
kvid decode [options] [TEXT ...]

Write IDs in a public form (encode), or read them back (decode). Without values, reads them from
standard input, one a line, and writes one a line, in order; the first bad value stops it (exit 1,
naming its line). No server is involved.

Options:
  --form F      decimal (default), base36 (0-9a-z) or base62 (0-9A-Za-z)
  --width N     fixed width, zero-padded (required with --encrypt); default: the shortest form
  --prefix P    text before the form (before the key identifier with --encrypt)
  --suffix S    text after it
  --encrypt     the keyed form: FF1 (NIST SP 800-38G) with the key in $${KEY_ENV} (hex; or
                id:hex pairs, the first being current), a key identifier before each value
  --tweak T     FF1 tweak: use the generator's name (default "")
  --json        print {"id": "...", "encoded": "..."} per value

The key is read from the environment only, never from an argument (which ps and shell history show).

Examples:
  KVID_ID_KEY=$(cat order.key) kvid encode --encrypt --width 12 --tweak order 1001 1002
  kvid next order -n 1000 | kvid encode --form base62 --width 7 --prefix ORD-
  kvid decode --form base36 lfls`;

const OPTIONS = {
  form: { type: "string" },
  width: { type: "string" },
  prefix: { type: "string" },
  suffix: { type: "string" },
  encrypt: { type: "boolean" },
  tweak: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

/** Where the commands read and write: the process's, or a test's. */
export interface CodecIo {
  /** Write one or more lines (joined with "\n", no trailing newline). */
  out(lines: string): void;
  /** The lines of standard input. */
  lines(): AsyncIterable<string>;
  /** An environment variable. */
  env(name: string): string | undefined;
}

/** The process's standard input, output and environment (Deno). */
export function processIo(): CodecIo {
  return {
    out: (lines) => console.log(lines),
    async *lines() {
      let rest = "";
      for await (const chunk of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
        const parts = (rest + chunk).split("\n");
        rest = parts.pop()!;
        for (const line of parts) yield line;
      }
      if (rest !== "") yield rest;
    },
    env: (name) => Deno.env.get(name),
  };
}

/** Build the codec the options describe. */
function codecOf(values: Record<string, string | boolean | undefined>, io: CodecIo): Codec<string> {
  const form = (values.form as string | undefined) ?? "decimal";
  let width: number | undefined;
  if (values.width !== undefined) {
    width = Number(values.width);
    if (!/^[1-9]\d*$/.test(values.width as string)) {
      throw usage(`--width must be a positive integer, got ${JSON.stringify(values.width)}`);
    }
  }
  // An own property only: "constructor" or "toString" is not a form.
  const forms = { decimal, base36, base62 };
  const make = Object.hasOwn(forms, form) ? forms[form as keyof typeof forms] : undefined;
  if (make === undefined) {
    throw usage(`--form must be decimal, base36 or base62, got ${JSON.stringify(form)}`);
  }
  let codec: Codec<string>;
  try {
    const inner: RadixCodec = make(width);
    if (values.encrypt) {
      if (width === undefined) throw usage("--encrypt needs --width (FF1 keeps one length)");
      const text = io.env(KEY_ENV);
      if (text === undefined || text.trim() === "") {
        throw usage(`--encrypt reads the key from $${KEY_ENV}, which is not set`);
      }
      codec = encrypted(inner, { ...parseKeys(text), tweak: (values.tweak as string) ?? "" });
    } else {
      if (values.tweak !== undefined) throw usage("--tweak goes with --encrypt");
      codec = inner;
    }
    if (values.suffix) codec = suffix(values.suffix as string, codec);
    if (values.prefix) codec = prefix(values.prefix as string, codec);
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw usage(err instanceof Error ? err.message : String(err));
  }
  return codec;
}

/**
 * Run `encode` or `decode`; resolves to the exit code.
 *
 * @param command `"encode"` or `"decode"`.
 * @param args The arguments after it.
 * @param io Where to read and write.
 * @returns The exit code ({@linkcode EXIT}): 0 when every value was written.
 * @throws {CliError} Exit 2 for bad options or a missing key, exit 1 for the first bad value
 *   (naming its argument or line; the values before it are written).
 */
export async function codecCommand(
  command: "encode" | "decode",
  args: string[],
  io: CodecIo,
): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    throw usage(`${command}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.out(CODEC_HELP);
    return EXIT.ok;
  }
  const codec = codecOf(values, io);
  const json = values.json === true;
  const one = (value: string, where: string): string => {
    try {
      if (command === "encode") {
        if (!/^(0|[1-9]\d*)$/.test(value)) {
          throw new KvIdError("domain", `not a non-negative decimal ID: ${JSON.stringify(value)}`);
        }
        const encoded = codec.encode(BigInt(value));
        return json ? JSON.stringify({ id: value, encoded }) : encoded;
      }
      const id = String(codec.decode(value));
      return json ? JSON.stringify({ id, encoded: value }) : id;
    } catch (err) {
      if (err instanceof KvIdError) throw new CliError(EXIT.failed, `${where}: ${err.message}`);
      throw err;
    }
  };
  if (positionals.length > 0) {
    io.out(positionals.map((v, i) => one(v, `argument ${i + 1}`)).join("\n"));
    return EXIT.ok;
  }
  // Standard input, in batches of lines so a million values are not a million writes.
  let batch: string[] = [];
  let n = 0;
  for await (const raw of io.lines()) {
    n++;
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (line === "") continue;
    try {
      batch.push(one(line, `line ${n}`));
    } catch (err) {
      // The values before the bad one are written: output lines match input lines up to it.
      if (batch.length > 0) io.out(batch.join("\n"));
      throw err;
    }
    if (batch.length === 10_000) {
      io.out(batch.join("\n"));
      batch = [];
    }
  }
  if (batch.length > 0) io.out(batch.join("\n"));
  return EXIT.ok;
}
