package io.nvmeof.protocol.auth;

/** A DH-HMAC-CHAP message or step the other side got wrong, with the reason code explanation that answers it. */
public final class AuthProtocolException extends RuntimeException {
    private final int explanation;

    public AuthProtocolException(int explanation, String message) {
        super(message, null, false, false);
        this.explanation = explanation;
    }

    /** One of {@code AuthMessages.EXP_*}. */
    public int explanation() { return explanation; }
}
