package io.nvmeof.rdma;

/** RDMA cannot be used on this machine; the message says why and what to install (see {@link RdmaLibrary}). */
public class RdmaUnavailableException extends RdmaException {
    private static final long serialVersionUID = 1L;

    public RdmaUnavailableException(String reason) {
        super(reason, 0);
    }
}
