// A copy of a GGUF file with its `tokenizer.chat_template` set to another template (added, or replacing the one it
// has), everything else byte for byte: the tests serve a tiny model with a real model's chat template. Tensor
// offsets are relative to the data section, so only the metadata and the padding before the data change.
import fs from 'node:fs';

const TEMPLATE_KEY = 'tokenizer.chat_template';
const STRING = 8;
const ARRAY = 9;
// Bytes of each fixed-size metadata type (GGUF v3): u8 i8 u16 i16 u32 i32 f32 bool . . u64 i64 f64.
const FIXED = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };

function reader(buf) {
  let at = 0;
  const r = {
    get at() { return at; },
    u32() { const v = buf.readUInt32LE(at); at += 4; return v; },
    u64() { const v = buf.readBigUInt64LE(at); at += 8; return Number(v); },
    string() { const n = r.u64(); const s = buf.toString('utf8', at, at + n); at += n; return s; },
    skip(type) {
      if (type === STRING) { r.string(); return; }
      if (type === ARRAY) {
        const inner = r.u32();
        const count = r.u64();
        for (let i = 0; i < count; i += 1) r.skip(inner);
        return;
      }
      if (!(type in FIXED)) throw new Error(`unknown GGUF metadata type ${type} at byte ${at}`);
      at += FIXED[type];
    },
  };
  return r;
}

function ggufString(text) {
  const bytes = Buffer.from(text, 'utf8');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(bytes.length));
  return Buffer.concat([len, bytes]);
}

export function writeWithChatTemplate(srcPath, templateText, outPath) {
  const buf = fs.readFileSync(srcPath);
  if (buf.toString('latin1', 0, 4) !== 'GGUF') throw new Error(`${srcPath} is not a GGUF file`);
  const r = reader(buf);
  r.u32();  // magic
  const version = r.u32();
  if (version !== 3) throw new Error(`${srcPath}: GGUF version ${version}; this helper writes version 3`);
  const nTensors = r.u64();
  const nKv = r.u64();
  const kept = [];
  let alignment = 32;
  for (let i = 0; i < nKv; i += 1) {
    const start = r.at;
    const key = r.string();
    const type = r.u32();
    const valueAt = r.at;
    r.skip(type);
    if (key === 'general.alignment') alignment = buf.readUInt32LE(valueAt);
    if (key !== TEMPLATE_KEY) kept.push(buf.subarray(start, r.at));
  }
  const infosStart = r.at;
  for (let i = 0; i < nTensors; i += 1) {
    r.string();
    const dims = r.u32();
    for (let d = 0; d < dims; d += 1) r.u64();
    r.u32();  // type
    r.u64();  // offset within the data section
  }
  const infos = buf.subarray(infosStart, r.at);
  const dataStart = Math.ceil(r.at / alignment) * alignment;

  const header = Buffer.alloc(24);
  header.write('GGUF', 0, 'latin1');
  header.writeUInt32LE(3, 4);
  header.writeBigUInt64LE(BigInt(nTensors), 8);
  header.writeBigUInt64LE(BigInt(kept.length + 1), 16);
  const type = Buffer.alloc(4);
  type.writeUInt32LE(STRING);
  const head = Buffer.concat([header, ...kept, ggufString(TEMPLATE_KEY), type, ggufString(templateText), infos]);
  const padding = Buffer.alloc((alignment - (head.length % alignment)) % alignment);
  fs.writeFileSync(outPath, Buffer.concat([head, padding, buf.subarray(dataStart)]));
}
