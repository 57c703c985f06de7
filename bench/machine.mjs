// The machine line of a result: CPU model, cores, memory, OS, Node and Chromium versions, date.
import { readFileSync } from 'node:fs';
import os from 'node:os';

function cpuModel() {
  try {
    const line = readFileSync('/proc/cpuinfo', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('model name'));
    if (line) return line.split(':')[1].trim();
  } catch {}
  return os.cpus()[0]?.model ?? 'unknown CPU';
}

export function machine(chromium) {
  return {
    cpu: cpuModel(),
    cores: os.cpus().length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    chromium,
    date: new Date().toISOString(),
  };
}

export function machineLine(m) {
  return `${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB; ${m.os}; ${m.chromium} headless; Node ${m.node}; ${m.date}`;
}
