// Starts the fauxqs SQS emulator through its API: its CLI logs every request.
import { startFauxqs } from "fauxqs";

const port = Number(process.env.SQS_PORT || 9324);
const server = await startFauxqs({ port, host: "127.0.0.1", logger: false });
console.log(`fauxqs listening on 127.0.0.1:${server.port}`);
const stop = async () => { await server.stop(); process.exit(0); };
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
