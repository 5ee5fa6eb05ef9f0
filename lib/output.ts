// Writing to stdout and stderr without process.stdout/process.stderr: in Bun, touching those
// builds Node's stream machinery, which costs about 15-20 ms of a start-up budget of 15 ms.
// A synchronous write on the file descriptor also means nothing is lost at process.exit(). The
// bytes come from TextEncoder, not Buffer, whose first use costs about 0.2 ms (lib/base64.ts).
import { writeSync } from "node:fs";

const encoder = new TextEncoder();

function writeAll(fd: number, text: string): void {
  let buf = encoder.encode(text);
  while (buf.length > 0) {
    try {
      buf = buf.subarray(writeSync(fd, buf));
    } catch (err) {
      // A non-blocking pipe that is full: wait for the reader rather than drop a line.
      if ((err as NodeJS.ErrnoException).code !== "EAGAIN") throw err;
      Bun.sleepSync(1);
    }
  }
}

export const writeStdout = (text: string): void => writeAll(1, text);
export const writeStderr = (text: string): void => writeAll(2, text);
