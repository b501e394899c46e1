package io.nvmeof.tgt.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.nvmeof.netty.tls.ExternalPskLookup;
import io.nvmeof.netty.tls.TlsPskHandler;

/**
 * On a listener that allows TLS without requiring it: the connection's first byte says which it is, as nvmet-tcp
 * peeks it. 0x16 starts a TLS handshake record (no NVMe/TCP PDU type is 0x16; a host starts with ICReq, type 0): TLS
 * takes the connection from there. Anything else is plain NVMe/TCP, and this handler steps aside.
 */
final class TlsDetector extends ChannelInboundHandlerAdapter {
    static final int TLS_HANDSHAKE_RECORD = 0x16;

    private final ExternalPskLookup keys;

    TlsDetector(ExternalPskLookup keys) {
        this.keys = keys;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof ByteBuf b) || !b.isReadable()) {
            ctx.fireChannelRead(msg);
            return;
        }
        if (b.getUnsignedByte(b.readerIndex()) == TLS_HANDSHAKE_RECORD) {
            ctx.pipeline().replace(this, TcpTransport.TLS_HANDLER, TlsPskHandler.server(keys));
            ctx.pipeline().fireChannelRead(b); // from the head: the TLS handler is first now
        } else {
            ctx.pipeline().remove(this);
            ctx.fireChannelRead(b);
        }
    }
}
