'use strict';
// Preload for Node (`NODE_OPTIONS=--require scripts/bind-localhost.cjs`).
//
// The MCP conformance suite starts its mock servers with `server.listen(0)`,
// which binds every interface. This machine may only listen on loopback, so this
// file patches net.Server.prototype.listen (http/https/express servers inherit
// it) to supply host 127.0.0.1 whenever the caller named a port but no host.
// Explicit hosts, Unix socket paths, handles and file descriptors are left alone.

const net = require('net');

const LOOPBACK = process.env.BIND_LOCALHOST_HOST || '127.0.0.1';
const originalListen = net.Server.prototype.listen;

function isPort(value) {
  if (typeof value === 'number') return true;
  return typeof value === 'string' && /^\d+$/.test(value);
}

function withLoopback(args) {
  if (args.length === 0 || typeof args[0] === 'function') {
    // listen() / listen(callback): a random port on every interface.
    return [0, LOOPBACK, ...args];
  }
  const first = args[0];
  if (isPort(first)) {
    // listen(port[, host][, backlog][, callback])
    if (typeof args[1] === 'string') return args; // explicit host
    return [first, LOOPBACK, ...args.slice(1)];
  }
  if (first && typeof first === 'object' && !(first instanceof net.Server)) {
    // listen(options[, callback]); options may instead name a path/handle/fd.
    const isNetworkOptions =
      first.path === undefined &&
      first.handle === undefined &&
      first._handle === undefined &&
      first.fd === undefined;
    if (isNetworkOptions && (first.host === undefined || first.host === null)) {
      return [{ ...first, host: LOOPBACK }, ...args.slice(1)];
    }
  }
  return args; // path string, handle, server, or explicit host
}

net.Server.prototype.listen = function listen(...args) {
  return originalListen.apply(this, withLoopback(args));
};
