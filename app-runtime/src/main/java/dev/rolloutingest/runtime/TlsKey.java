package dev.rolloutingest.runtime;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.Key;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.util.Base64;
import java.util.Collections;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;

/**
 * The endpoints' TLS key and certificate chain, loaded once from a keystore: as an {@link SSLContext} for the HTTP
 * endpoint, and as PEM for servers that take PEM (Arrow Flight's gRPC), so one keystore setting serves both.
 */
public final class TlsKey {
    private final SSLContext context;
    private final byte[] certificateChainPem;
    private final byte[] privateKeyPem;

    private TlsKey(SSLContext context, byte[] certificateChainPem, byte[] privateKeyPem) {
        this.context = context;
        this.certificateChainPem = certificateChainPem;
        this.privateKeyPem = privateKeyPem;
    }

    /** Loads the keystore's one key entry; an unreadable store, or one without a key, fails with the reason. */
    static TlsKey load(Path path, char[] password, String type) throws IOException, GeneralSecurityException {
        KeyStore store = KeyStore.getInstance(type);
        try (InputStream in = Files.newInputStream(path)) {
            store.load(in, password);
        }
        KeyManagerFactory keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        keys.init(store, password);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(keys.getKeyManagers(), null, null);
        for (String alias : Collections.list(store.aliases())) {
            Key key = store.getKey(alias, password);
            if (key instanceof PrivateKey privateKey) {
                StringBuilder chain = new StringBuilder();
                for (Certificate certificate : store.getCertificateChain(alias)) {
                    chain.append(pem("CERTIFICATE", certificate.getEncoded()));
                }
                return new TlsKey(
                        context,
                        chain.toString().getBytes(StandardCharsets.US_ASCII),
                        pem("PRIVATE KEY", privateKey.getEncoded()).getBytes(StandardCharsets.US_ASCII));
            }
        }
        throw new GeneralSecurityException("the keystore holds no private key");
    }

    public SSLContext context() {
        return context;
    }

    /** The certificate chain, leaf first, as PEM. */
    public byte[] certificateChainPem() {
        return certificateChainPem.clone();
    }

    /** The private key as PKCS#8 PEM. */
    public byte[] privateKeyPem() {
        return privateKeyPem.clone();
    }

    private static String pem(String type, byte[] der) {
        return "-----BEGIN " + type + "-----\n"
                + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der)
                + "\n-----END " + type + "-----\n";
    }
}
