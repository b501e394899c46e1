package io.nvmeof.tgt.core;

/** The execute step a parse function picks for a request (Linux nvmet's {@code req->execute}). */
@FunctionalInterface
public interface RequestHandler {
    void execute(Request request);
}
