package io.polylock;

/** The lock server refused the credentials (wrong password, ACL, ZooKeeper digest). */
public class PolylockAuthException extends PolylockConnectionException {
    private static final long serialVersionUID = 1L;

    public PolylockAuthException(String message) {
        super(Code.AUTH, message);
    }
}
